"""Every mcpline module imports under a simulated Windows, and a stdio server serves there.

`simulate_windows` removes what Windows lacks (``fcntl``, ``termios``, ``SIGHUP``, ``killpg``,
``AF_UNIX``…) and sets ``sys.platform`` to ``"win32"`` before importing mcpline, so a
POSIX-only name used at import time fails here, on Linux, before any Windows machine sees it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..proc import FIXTURES, REPO, ServerProcess

CORE = FIXTURES / "core_server.py"

pytestmark = pytest.mark.posix_only(reason="simulates Windows on a POSIX Python")


def simulate(*extra: str, cwd: Path = REPO) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "tests.platform.simulate_windows", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def test_every_module_imports_as_on_windows() -> None:
    report = simulate()
    assert report["failed"] == {}
    assert report["name"] == "windows" and report["impl"] == "mcpline._platform.windows"
    imported = set(report["imported"])
    assert {"mcpline.transports.stdio", "mcpline.client.process", "mcpline.check.runner"} <= (
        imported
    )
    assert {"mcpline._examples.quickstart", "mcpline.client._watchdog"} <= imported
    assert len(imported) > 80
    # The POSIX implementation refuses to load there, with a reason.
    assert set(report["refused"]) == {"mcpline._platform.posix", "mcpline._platform._procfs"}
    # Without kernel32 (ctypes.WinDLL) a child is not started suspended: nothing could resume it.
    assert report["spawn_options"] == {"creationflags": 0x200}


def test_an_import_time_posix_name_is_caught(tmp_path: Path) -> None:
    """The simulation is not vacuous: a module using SIGHUP at import fails it."""
    pkg = tmp_path / "posixy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import signal\nHANGUP = signal.SIGHUP\n")
    (tmp_path / "needs_fcntl.py").write_text("import fcntl\n")
    env_path = f"{tmp_path}"
    run = subprocess.run(
        [sys.executable, "-m", "tests.platform.simulate_windows", "posixy", "needs_fcntl"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": env_path},
    )
    assert run.returncode == 0, run.stderr
    failed = json.loads(run.stdout)["failed"]
    assert set(failed) == {"posixy", "needs_fcntl"}
    assert "SIGHUP" in failed["posixy"] and "fcntl" in failed["needs_fcntl"]


def test_a_stdio_server_serves_on_the_windows_implementation() -> None:
    """Reader and writer threads, signal.signal handlers, no kernel32: requests are answered,
    stdout stays pure (prints, fd-1 writes, child processes), and EOF ends it with status 0."""
    p = ServerProcess(
        [sys.executable, "-m", "tests.platform.simulate_windows", "--serve", str(CORE)],
        cwd=str(REPO),
        env={"MCPLINE_UVLOOP": "0"},
    )
    try:
        r = p.request("server/discover", timeout=30)
        assert "result" in r, (r, p.stderr)
        for tool, expected in (
            ("stray_print", "printed"),
            ("fd_write", "written"),
            ("child_print", "children ran"),
        ):
            resp = p.call(tool, {"text": "forged"})
            assert resp["result"]["content"][0]["text"] == expected, p.stderr
        big = p.call("echo", {"text": "x" * 300_000})
        assert big["result"]["content"][0]["text"] == "x" * 300_000
        p.close_stdin()
        assert p.wait(10) == 0, p.stderr
        assert p.problems == []
        assert all(b"forged" not in line for line in p.raw_out)
    finally:
        p.stop()
