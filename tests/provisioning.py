"""What the provisioning helpers of the tests share (`tests.redis_server`,
`tests.conformance.provision`): running an install step, and a lock across test processes.
Standard library only."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path


class ProvisionError(RuntimeError):
    """A tool the tests need could not be found, installed or run."""


def run(
    cmd: list[str],
    what: str,
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """``cmd``'s stdout; `ProvisionError` naming ``what`` if it cannot run, times out or fails."""
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise ProvisionError(f"{what}: timed out after {e.timeout:.0f}s: {' '.join(cmd)}") from e
    except OSError as e:
        raise ProvisionError(f"{what}: could not run {cmd[0]}: {e}") from e
    if proc.returncode != 0:
        raise ProvisionError(
            f"{what}: exit {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc.stdout


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``lock_file`` (created with its folder)."""
    import fcntl  # POSIX only: imported here so that the module loads everywhere

    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
