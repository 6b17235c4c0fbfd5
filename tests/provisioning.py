"""What the provisioning helpers of the tests share (`tests.redis_server`,
`tests.conformance.provision`): running an install step, retrying it when the network failed,
verifying what is cached, and a lock across test processes. Standard library only.

A download that fails on the network (a reset, a timeout, a 5xx answer, a name that did not
resolve) is tried `ATTEMPTS` times, `BACKOFF` seconds apart; any other failure, or the last
network one, raises `ProvisionError` naming the step and the command that retries it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

ATTEMPTS = 3
BACKOFF = (2.0, 8.0)
"""Seconds before the second and the third try."""

NETWORK = re.compile(
    r"ECONNRESET|ECONNREFUSED|ETIMEDOUT|ESOCKETTIMEDOUT|ENOTFOUND|EAI_AGAIN|ENETUNREACH|EPIPE"
    r"|socket hang up|network|\bE(?:429|5\d\d)\b|HTTP Error (?:429|5\d\d)"
    r"|Temporary failure|Failed to fetch|Could not (?:connect|resolve)"
    r"|Connection (?:reset|refused|timed out)",
    re.IGNORECASE,
)
"""What npm, apt and urllib print when the network, not the request, failed."""


class ProvisionError(RuntimeError):
    """A tool the tests need could not be found, installed or run.

    ``transient`` is true when the network failed (another try may succeed)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


def run(
    cmd: list[str],
    what: str,
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """``cmd``'s stdout; `ProvisionError` naming ``what`` if it cannot run, times out or fails
    (``transient`` for a time-out, or a failure whose output names a network error)."""
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
        raise ProvisionError(
            f"{what}: timed out after {e.timeout:.0f}s: {' '.join(cmd)}", transient=True
        ) from e
    except OSError as e:
        raise ProvisionError(f"{what}: could not run {cmd[0]}: {e}") from e
    if proc.returncode != 0:
        raise ProvisionError(
            f"{what}: exit {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}",
            transient=bool(NETWORK.search(proc.stdout + proc.stderr)),
        )
    return proc.stdout


def retrying(
    step: Callable[[], T], what: str, retry: str, sleep: Callable[[float], None] = time.sleep
) -> T:
    """``step()``, tried again after `BACKOFF` while it fails on the network (`ATTEMPTS` in
    all); a failure raises `ProvisionError` saying what failed, how often, and ``retry``
    (the command that tries again by hand)."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return step()
        except ProvisionError as e:
            if not e.transient:
                raise ProvisionError(f"{what} failed: {e}\n\nTo retry: {retry}") from e
            if attempt == ATTEMPTS:
                raise ProvisionError(
                    f"{what} failed {ATTEMPTS} times on the network; the last: {e}\n\n"
                    f"To retry: {retry}",
                    transient=True,
                ) from e
            sleep(BACKOFF[min(attempt, len(BACKOFF)) - 1])
    raise AssertionError("unreachable")


def fingerprint(path: Path) -> dict[str, str | int]:
    """Size and SHA-256 of ``path``, as a marker records what it vouches for."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


_VERIFIED: set[tuple[str, str]] = set()
"""(path, sha256) pairs this process already hashed: each file is hashed once per process."""


def intact(path: Path, recorded: object) -> bool:
    """Whether ``path`` still has the size and SHA-256 a marker ``recorded`` (a half-written
    or truncated cache does not)."""
    if not isinstance(recorded, dict) or not {"size", "sha256"} <= recorded.keys():
        return False
    try:
        if path.stat().st_size != recorded["size"]:
            return False
    except OSError:
        return False
    key = (str(path), str(recorded["sha256"]))
    if key not in _VERIFIED:
        if fingerprint(path)["sha256"] != recorded["sha256"]:
            return False
        _VERIFIED.add(key)
    return True


def write_json(path: Path, data: dict[str, object]) -> None:
    """Write ``data`` to ``path`` all at once (a reader sees the old file or the new one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


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
