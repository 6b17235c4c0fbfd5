"""The CLI when whoever reads its stdout goes away (``mcpline ... | head -1``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..client.util import QUICKSTART, Fake
from .test_cli import MCPLINE, PY


def test_closed_stdout_is_exit_2_with_one_line_not_a_traceback() -> None:
    proc = subprocess.Popen(
        [MCPLINE, "tools", "--", PY, str(QUICKSTART)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the answer is printed
    err = proc.stderr.read().decode()
    code = proc.wait(30)
    assert code == 2, err  # 1 would claim the tool failed
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "stdout" in lines[0]


def test_listen_ends_quietly_when_its_reader_goes_away(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    proc = subprocess.Popen(
        [MCPLINE, "listen", "--", sys.executable, *fake.argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **fake.env},
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert b"subscriptions/acknowledged" in first
    proc.stdout.close()  # like `| head -1`: the next notification has nowhere to go
    err = proc.stderr.read().decode()
    code = proc.wait(30)
    assert code == 0, err
    assert err == ""
