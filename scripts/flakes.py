"""Find the tests that fail only on a busy machine: ``python -m scripts.flakes [options]
[-- PYTEST_ARGS]`` runs the suite (or the selection in PYTEST_ARGS) ``--runs`` times while
heavy mixed load of its own runs beside it, and lists every test that failed at least once.

The load: ``--burners`` busy loops, ``--io`` writers (write, fsync, read back and delete
files under a temporary folder), ``--churn`` process spawners (short-lived interpreters,
one after the other) and ``--sockets`` loopback connection churners (127.0.0.1 only). Every
load process stops by itself at ``--max-seconds`` and when this script goes away, and is
ended when the runs are over. The load average is sampled and reported with the results.

Exit status: 0 when every test passed in every run, 1 when some test failed at least once,
2 when a run could not be made (pytest itself broke, or a run hit ``--max-seconds``).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path

assert sys.platform != "win32", "scripts/flakes.py needs POSIX (load average, non-blocking pipes)"

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = (2, 3, 4, 5)
"""pytest's exit codes for an interrupted run, an internal error, a usage error and a
selection of no tests."""


def _orphaned(parent: int) -> bool:
    return os.getppid() != parent


def _burn(until: float, parent: int) -> None:
    """A busy loop (checks the clock and its parent every few million steps)."""
    x = 0
    while time.monotonic() < until and not _orphaned(parent):
        for i in range(200_000):
            x ^= i * i
    del x


def _disk(until: float, parent: int, folder: str) -> None:
    """Write, fsync, read back and delete 4 MiB files."""
    block = os.urandom(1 << 20)
    path = Path(folder) / f"io-{os.getpid()}"
    while time.monotonic() < until and not _orphaned(parent):
        with open(path, "wb") as f:
            for _ in range(4):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        path.read_bytes()
        path.unlink()


def _spawn(until: float, parent: int) -> None:
    """Start short-lived interpreters one after the other (fork, exec, import, exit)."""
    while time.monotonic() < until and not _orphaned(parent):
        subprocess.run(
            [sys.executable, "-c", "import json, asyncio"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
            timeout=max(1.0, until - time.monotonic()),
        )


def _loopback(until: float, parent: int) -> None:
    """Open, use and close loopback TCP connections (127.0.0.1 only)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        address = server.getsockname()
        while time.monotonic() < until and not _orphaned(parent):
            with socket.create_connection(address, timeout=5) as client:
                peer, _ = server.accept()
                with peer:
                    client.sendall(b"x" * 65536)
                    got = 0
                    while got < 65536:
                        got += len(peer.recv(65536))


@dataclass
class Load:
    """The load processes; a context manager that starts them and ends them."""

    burners: int
    io: int
    churn: int
    sockets: int
    max_seconds: float
    folder: str
    procs: list[BaseProcess] = field(default_factory=list)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        until = time.monotonic() + self.max_seconds
        me = os.getpid()
        ctx = multiprocessing.get_context("spawn")
        jobs: list[tuple[Callable[..., None], tuple[object, ...]]] = [
            *[(_burn, (until, me))] * self.burners,
            *[(_disk, (until, me, self.folder))] * self.io,
            *[(_spawn, (until, me))] * self.churn,
            *[(_loopback, (until, me))] * self.sockets,
        ]
        for target, args in jobs:
            proc = ctx.Process(target=target, args=args, daemon=True)
            proc.start()
            self.procs.append(proc)
        try:
            yield
        finally:
            for p in self.procs:
                p.terminate()
            for p in self.procs:
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join()
            self.procs.clear()


@dataclass
class RunResult:
    number: int
    seconds: float
    exit_code: int
    failed: dict[str, str]
    """Each failed test's id and the first line of why it failed."""
    load: tuple[float, float]
    """The lowest and highest 1-minute load average sampled during the run."""


def failures(junit: Path) -> dict[str, str]:
    """The tests a JUnit XML report says failed or erred: ``{path::name: first line of why}``."""
    if not junit.exists():
        return {}
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            module = case.get("classname", "").replace(".", "/")
            why = (bad.get("message") or bad.text or "").strip().splitlines()
            out[f"{module}.py::{case.get('name', '?')}"] = why[0][:300] if why else "?"
    return out


def run_once(number: int, pytest_args: list[str], max_seconds: float, folder: Path) -> RunResult:
    """One pytest run (its own JUnit report in ``folder``), sampling the load average."""
    junit = folder / f"run-{number}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd += [f"--junitxml={junit}", *pytest_args]
    started = time.monotonic()
    # Its own session: a run cut off at max_seconds ends with every process it started (the
    # servers its tests spawned included), not only pytest.
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    low, high = float("inf"), 0.0
    tail: list[bytes] = []
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while proc.poll() is None:
        if time.monotonic() - started > max_seconds:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        one = os.getloadavg()[0]
        low, high = min(low, one), max(high, one)
        with contextlib.suppress(BlockingIOError, TypeError):
            chunk = proc.stdout.read()
            if chunk:
                tail = (tail + chunk.splitlines(keepends=True))[-40:]
        time.sleep(1.0)
    rest = proc.stdout.read() or b""
    tail = (tail + rest.splitlines(keepends=True))[-40:]
    seconds = time.monotonic() - started
    code = proc.returncode
    failed = failures(junit)
    if code in NOT_RUN or code < 0:
        sys.stdout.write(b"".join(tail).decode("utf-8", "replace"))
    return RunResult(number, seconds, code, failed, (min(low, high), high))


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The script's options, and the pytest arguments after ``--``."""
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(
        prog="python -m scripts.flakes",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--runs", type=int, default=5, help="how many runs (default 5)")
    cpus = os.cpu_count() or 2
    parser.add_argument("--burners", type=int, default=2 * cpus, help="busy loops (2 per CPU)")
    parser.add_argument("--io", type=int, default=2, help="disk writers (default 2)")
    parser.add_argument("--churn", type=int, default=2, help="process spawners (default 2)")
    parser.add_argument("--sockets", type=int, default=1, help="loopback churners (default 1)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=1800.0,
        help="longest a run may take; the load stops by itself after runs x this (default 1800)",
    )
    args = parser.parse_args(argv[:cut])
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args, argv[cut + 1 :]


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = parse(sys.argv[1:] if argv is None else argv)
    scratch = tempfile.mkdtemp(prefix="mcpline-flakes-")
    reports = ROOT / ".cache" / "flakes"
    shutil.rmtree(reports, ignore_errors=True)
    reports.mkdir(parents=True)
    load = Load(
        args.burners, args.io, args.churn, args.sockets, args.runs * args.max_seconds, scratch
    )
    what = " ".join(pytest_args) or "the whole suite"
    print(
        f"flakes: {args.runs} run(s) of {what} beside {args.burners} busy loop(s), {args.io} "
        f"disk writer(s), {args.churn} process spawner(s), {args.sockets} loopback churner(s)",
        flush=True,
    )
    results: list[RunResult] = []
    try:
        with load.running():
            for n in range(1, args.runs + 1):
                r = run_once(n, pytest_args, args.max_seconds, reports)
                results.append(r)
                print(
                    f"run {n}: exit {r.exit_code} in {r.seconds:.0f}s, load average "
                    f"{r.load[0]:.1f}-{r.load[1]:.1f}, {len(r.failed)} failed",
                    flush=True,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report(results, reports)


def report(results: list[RunResult], reports: Path) -> int:
    counts = Counter(test for r in results for test in r.failed)
    broken = [r for r in results if r.exit_code in NOT_RUN or r.exit_code < 0]
    if counts:
        print(f"\n{len(counts)} test(s) failed at least once in {len(results)} run(s):")
        for test, n in counts.most_common():
            print(f"  {n}/{len(results)}  {test}")
            for r in results:
                if test in r.failed:
                    print(f"        run {r.number}: {r.failed[test]}")
        print(f"each run's JUnit report (with the whole of each failure): {reports}/run-N.xml")
    else:
        print(f"\nno test failed in {len(results)} run(s)")
    for r in broken:
        print(f"run {r.number} did not complete (exit {r.exit_code}): see its output above")
    if broken:
        return 2
    return 1 if counts else 0


if __name__ == "__main__":
    sys.exit(main())
