"""The ``fast`` tier of ``make test-fast`` (marked in tests/conftest.py): the unit files and
the tests on the in-memory driver, not a test that goes back to a process."""

from __future__ import annotations

import subprocess
import sys

from .proc import REPO


def collected(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_the_fast_tier_is_the_unit_and_in_memory_tests() -> None:
    files = ["tests/server/test_concurrency.py", "tests/test_jsonrpc.py", "tests/cli/test_cli.py"]
    everything, fast = collected(*files), collected("-m", "fast", *files)
    concurrency = "tests/server/test_concurrency.py::"
    assert f"{concurrency}test_twenty_slow_tools_run_together" in fast  # memory driver
    assert f"{concurrency}test_cancelled_tool_is_never_answered_and_server_keeps_serving" not in (
        fast  # marked back to a process
    )
    unit = {t for t in everything if t.startswith("tests/test_jsonrpc.py::")}
    assert unit and unit <= fast
    assert not {t for t in fast if t.startswith("tests/cli/")}  # processes and pipes
