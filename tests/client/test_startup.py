"""A server that fails at start-up (before it reads its first request) is reported at once,
with its stderr, and never restarted; one that dies after reading keeps the restarts."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from mcpline.client import Client, ConnectionLost
from mcpline.client.process import final_exception

from .util import run

pytestmark = pytest.mark.posix_only(reason="servers started through /bin/sh")

SCRIPTS = {
    "syntax": "def broken(:\n    pass\n",
    "import": (
        "import sys\n"
        "for i in range(30):\n"
        '    print(f"noise {i:02d}", file=sys.stderr)\n'
        "import mcpline_no_such_module_anywhere\n"
    ),
    "never-serves": (
        "from mcpline import Server\n"
        'server = Server("forgot-to-run")\n'
        "@server.tool()\n"
        "def hi() -> str:\n"
        '    """Hi."""\n'
        '    return "hi"\n'
    ),
    "missing-command": "",
}
EXPECTED = {
    "syntax": ["exited with code 1", "SyntaxError", "def broken(:"],
    "import": ["exited with code 1", "noise 29", "ModuleNotFoundError: No module named"],
    "never-serves": ["exited with code 0", "nothing on stderr"],
    "missing-command": ["exited with code 127", "not found"],
}
BACKOFF = 3.0
"""The first restart would wait this long: the error must come well before."""


def wrapped(tmp_path: Path, case: str) -> tuple[str, list[str], Path]:
    """``sh -c`` that counts its starts in a file, then execs the failing server."""
    starts = tmp_path / "starts"
    if case == "missing-command":
        target = "/nonexistent/mcp-server-binary"
    else:
        script = tmp_path / "bad.py"
        script.write_text(SCRIPTS[case])
        target = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    return "/bin/sh", ["-c", f"echo start >> {shlex.quote(str(starts))}; exec {target}"], starts


@pytest.mark.parametrize("case", list(SCRIPTS))
def test_startup_failure_is_reported_at_once_without_restarts(tmp_path: Path, case: str) -> None:
    command, args, starts = wrapped(tmp_path, case)

    async def main() -> tuple[ConnectionLost, float]:
        async with Client.stdio(command, args, restart_backoff=BACKOFF) as c:
            t0 = time.monotonic()
            with pytest.raises(ConnectionLost) as ei:
                await c.discover()
            return ei.value, time.monotonic() - t0

    err, elapsed = run(main())
    assert not err.retriable
    assert "before answering its first request" in str(err)
    for fragment in EXPECTED[case]:
        assert fragment in str(err), err
    assert "noise 05" not in str(err)  # only the tail of stderr
    assert elapsed < BACKOFF, f"{elapsed:.2f}s: was it restarted?"
    assert starts.read_text().count("start") == 1


def test_a_failing_legacy_handshake_is_reported_at_once_too(tmp_path: Path) -> None:
    command, args, starts = wrapped(tmp_path, "syntax")

    async def main() -> None:
        async with Client.stdio(command, args, era="legacy", restart_backoff=BACKOFF) as c:
            with pytest.raises(ConnectionLost, match="SyntaxError") as ei:
                await c.list_tools()
            assert not ei.value.retriable and c.restarts == 0

    run(main())
    assert starts.read_text().count("start") == 1


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (
            'Traceback (most recent call last):\n  File "s.py", line 3, in <module>\n'
            "    raise KeyError\npkg.mod.Missing: the key\nsome later noise\n",
            ("Missing: the key", 3),
        ),
        (
            'Traceback (most recent call last):\n  File "s.py", line 1\n    x\nKeyboardInterrupt\n',
            ("KeyboardInterrupt", 3),
        ),
        ('  File "s.py", line 2\n    ^^^\nlib.BadThingError: no\n', ("BadThingError: no", 2)),
        ("listening on port 1\nstarting\n", None),
        ("  indented.ValueError: only frames\n", None),
    ],
)
def test_final_exception_line(stderr: str, expected: tuple[str, int] | None) -> None:
    assert final_exception(stderr.splitlines()) == expected
