"""A real ``redis-server`` for the tests, found or provisioned without root, and run on loopback.

`redis_binary` returns a working ``redis-server``, first found:

1. ``redis-server`` on ``PATH``;
2. the copy already provisioned in the git-ignored ``<repo>/.cache/redis/`` (a marker names
   it, and it must still answer ``--version``);
3. a new copy there: ``apt-get download`` of Debian's ``redis-server`` and ``redis-tools`` and
   of the library packages they need that the machine lacks (followed through
   ``apt-cache depends``, checked with ``dpkg-query``), unpacked with ``dpkg-deb -x``, run
   with ``LD_LIBRARY_PATH`` on the unpacked libraries. No root is needed; when apt knows no
   such package (no package lists yet) the lists are fetched into ``.cache/redis/apt``;
4. as root only: ``apt-get install -y redis-server``.

Anything else raises `ProvisionError` (the tests that need Redis then fail) naming the
step and the command that retries it; downloads are retried on network errors
(`tests.provisioning.retrying`). The marker records the size and SHA-256 of the unpacked
binary and is written last: a half-done or damaged copy is downloaded again. Concurrent
callers serialise on an ``fcntl.flock``; the second finds the first one's marker.

`RedisServer` runs one ``redis-server`` on a free loopback port in a temporary directory
(no persistence) and can stop and restart it on the same port. Standard library only, so it
also runs as a script: ``python -m tests.redis_server [--force]`` provisions and prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .provisioning import ProvisionError, fingerprint, intact, locked, retrying, run, write_json

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "redis"
ROOT = CACHE / "root"
DEBS = CACHE / "debs"
APT_STATE = CACHE / "apt"
MARKER = CACHE / "provisioned.json"
LOCK_FILE = REPO / ".cache" / ".redis-provision.lock"
PACKAGES = ("redis-server", "redis-tools")
TIMEOUT = 300.0
RETRY = "python -m tests.redis_server --force"
"""The command that provisions again by hand (from the repository's root, in its venv)."""


@dataclass(frozen=True)
class RedisBinary:
    path: Path
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment it needs (``LD_LIBRARY_PATH`` for a provisioned copy)."""
    version: str = ""
    how: str = ""
    """Where it came from: ``path``, ``cache``, ``download`` or ``apt-get install``."""

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        for key, value in self.env.items():
            env[key] = f"{value}{os.pathsep}{env[key]}" if env.get(key) else value
        return env


def _run(
    cmd: list[str], what: str, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    return run(cmd, what, timeout=TIMEOUT, cwd=cwd, env=env)


def _version(binary: RedisBinary) -> str:
    out = _run([str(binary.path), "--version"], "running redis-server", env=binary.environ())
    found = re.search(r"v=(\S+)", out)
    if not found:
        raise ProvisionError(f"{binary.path} --version said {out!r}")
    return found.group(1)


def _checked(binary: RedisBinary) -> RedisBinary:
    return RedisBinary(binary.path, binary.env, _version(binary), binary.how)


# --- apt without root -------------------------------------------------------------------------


class _Apt:
    """apt-get/apt-cache with the machine's package lists, or with private ones."""

    def __init__(self) -> None:
        self.options: list[str] = []

    def use_private_lists(self) -> None:
        """Fetch the package lists into the cache (``apt-get update`` needs no root so)."""
        lists, cache = APT_STATE / "lists", APT_STATE / "cache"
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (cache / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        self.options = [
            "-o",
            f"Dir::State::Lists={lists}",
            "-o",
            f"Dir::Cache={cache}",
            "-o",
            "Debug::NoLocking=1",
        ]
        retrying(
            lambda: _run(["apt-get", "-q", *self.options, "update"], "apt-get update"),
            "fetching the package lists",
            RETRY,
        )

    def depends(self, package: str) -> list[list[str]]:
        """``package``'s Depends and PreDepends, each a list of alternatives."""
        out = _run(
            ["apt-cache", *self.options, "depends", "--no-recommends", "--no-suggests",
             "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", package],
            f"reading the dependencies of {package}",
        )  # fmt: skip
        groups: list[list[str]] = []
        alternative = False
        for line in out.splitlines()[1:]:
            found = re.match(r"\s*(\|?)(?:Pre)?Depends: (\S+)", line)
            if found:
                name = found.group(2).strip("<>").split(":")[0]
                if alternative:
                    groups[-1].append(name)
                else:
                    groups.append([name])
                alternative = found.group(1) == "|"
        return groups

    def download(self, packages: list[str], into: Path) -> None:
        def attempt() -> None:
            for partial in into.glob("*.deb"):
                partial.unlink()
            _run(
                ["apt-get", "-q", *self.options, "download", *packages],
                "apt-get download",
                cwd=into,
            )

        retrying(attempt, f"downloading {' '.join(packages)}", RETRY)


def _installed(package: str) -> bool:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.strip() == "install ok installed"


def _needed(apt: _Apt) -> list[str]:
    """The redis packages and the library packages they need that are not installed.

    Only ``lib*`` dependencies matter to a binary run in place; the others (``adduser``,
    ``lsb-base``) serve the packages' install scripts, which are never run here.
    """
    wanted = list(PACKAGES)
    seen = set(wanted)
    queue = list(wanted)
    while queue:
        for alternatives in apt.depends(queue.pop()):
            if any(_installed(name) for name in alternatives):
                continue
            name = alternatives[0]
            if name in seen or not name.startswith("lib"):
                continue
            seen.add(name)
            wanted.append(name)
            queue.append(name)
    return wanted


def _library_dirs(root: Path) -> list[str]:
    dirs = {str(p.parent) for p in root.rglob("*.so*") if p.is_file() or p.is_symlink()}
    return sorted(dirs)


def _unpack() -> RedisBinary:
    """Download and unpack Debian's redis-server into the cache (no root needed)."""
    for stale in (MARKER, MARKER.with_suffix(".tmp")):
        stale.unlink(missing_ok=True)
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.rmtree(DEBS, ignore_errors=True)
    DEBS.mkdir(parents=True)
    apt = _Apt()
    try:
        packages = _needed(apt)
        apt.download(packages, DEBS)
    except ProvisionError:
        if shutil.which("apt-get") is None:
            raise
        apt.use_private_lists()  # no lists yet, or stale ones naming gone versions
        packages = _needed(apt)
        apt.download(packages, DEBS)
    debs = sorted(DEBS.glob("*.deb"))
    if len(debs) < len(packages):
        raise ProvisionError(f"asked for {packages}, got {[d.name for d in debs]}")
    ROOT.mkdir(parents=True)
    for deb in debs:
        _run(["dpkg-deb", "-x", str(deb), str(ROOT)], f"unpacking {deb.name}")
    path = ROOT / "usr" / "bin" / "redis-server"
    if not path.exists():
        raise ProvisionError(f"{path} is missing after unpacking {[d.name for d in debs]}")
    binary = _checked(
        RedisBinary(path, {"LD_LIBRARY_PATH": os.pathsep.join(_library_dirs(ROOT))}, how="download")
    )
    _write_marker(binary, [d.name for d in debs])
    return binary


def _write_marker(binary: RedisBinary, debs: list[str]) -> None:
    write_json(
        MARKER,
        {
            "path": str(binary.path),
            "env": binary.env,
            "version": binary.version,
            "debs": debs,
            "artefact": fingerprint(binary.path),
        },
    )


def _cached() -> RedisBinary | None:
    """The provisioned copy if its marker vouches for it and it still answers ``--version``
    (a marker from before fingerprints gets one)."""
    try:
        data = json.loads(MARKER.read_text())
        binary = RedisBinary(Path(data["path"]), dict(data["env"]), how="cache")
        if not binary.path.is_file():
            return None
        if "artefact" in data and not intact(binary.path, data["artefact"]):
            return None
        checked = _checked(binary)
        if "artefact" not in data:
            _write_marker(checked, list(data.get("debs", [])))
        return checked
    except (OSError, ValueError, KeyError, TypeError, ProvisionError):
        return None


def _apt_install() -> RedisBinary:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "redis-server"]
    try:
        _run(cmd, "installing redis-server", env=env)
    except ProvisionError:
        _run(["apt-get", "update", "-q"], "apt-get update", env=env)
        _run(cmd, "installing redis-server", env=env)
    found = shutil.which("redis-server") or "/usr/bin/redis-server"
    return _checked(RedisBinary(Path(found), how="apt-get install"))


def redis_binary(force: bool = False) -> RedisBinary:
    """A working redis-server (see the module docstring); `ProvisionError` if there is none."""
    if not force:
        on_path = shutil.which("redis-server")
        if on_path:
            return _checked(RedisBinary(Path(on_path), how="path"))
        if (cached := _cached()) is not None:
            return cached
    with locked(LOCK_FILE):
        if not force and (cached := _cached()) is not None:
            return cached
        try:
            return _unpack()
        except ProvisionError as unpack_error:
            if os.geteuid() != 0:
                raise _retryable(unpack_error) from None
            try:
                return _apt_install()
            except ProvisionError as install_error:
                raise _retryable(
                    ProvisionError(f"{unpack_error}\n\nthen: {install_error}")
                ) from None


def _retryable(error: ProvisionError) -> ProvisionError:
    """``error`` as the tests report it: what failed, and the command that retries."""
    text = str(error)
    if "To retry:" not in text:
        text += f"\n\nTo retry: {RETRY}"
    return ProvisionError(f"provisioning redis-server: {text}", transient=error.transient)


# --- a running server -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ping(port: int, timeout: float = 1.0) -> bool:
    """Whether a Redis on ``127.0.0.1:port`` answers ``PING``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` on ``127.0.0.1:port``, without persistence, in ``workdir``."""

    def __init__(self, binary: RedisBinary, workdir: Path, port: int | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> None:
        argv = [
            str(self.binary.path),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--logfile", str(self.log),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            argv,
            cwd=self.workdir,
            env=self.binary.environ(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not ping(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log.read_text()[-2000:] if self.log.exists() else ""
                raise ProvisionError(f"redis-server on port {self.port} did not start:\n{tail}")
            time.sleep(0.02)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A started `RedisServer` in a temporary directory, stopped at the end."""
    binary = redis_binary()
    with tempfile.TemporaryDirectory(prefix="mcpline-redis-") as tmp:
        for attempt in range(3):
            server = RedisServer(binary, Path(tmp))
            try:
                server.start()
                break
            except ProvisionError:
                if attempt == 2:
                    raise
        try:
            yield server
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    started = time.monotonic()
    try:
        binary = redis_binary(force="--force" in args)
    except ProvisionError as e:
        print(f"provisioning failed: {e}", file=sys.stderr)
        return 1
    print(f"redis-server {binary.version} ({binary.how}): {binary.path}")
    if binary.env:
        print(f"environment: {binary.env}")
    print(f"took {time.monotonic() - started:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
