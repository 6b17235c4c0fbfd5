"""examples/client.py, run as a script: it starts the quickstart server with Client.stdio and
prints what it found and what the calls returned, one JSON object per line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..proc import EXAMPLES


def test_the_client_script_discovers_lists_and_calls(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "client.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,  # the script finds quickstart.py beside itself
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["step"] for line in lines] == ["discover", "tool", "tool", "call", "call"]
    discover, add_tool, divide_tool, add, divide = lines
    assert discover == {
        "step": "discover",
        "era": "modern",
        "protocolVersion": "2026-07-28",
        "server": {"name": "calculator", "version": "1.0.0"},
        "capabilities": ["logging", "tools"],
    }
    assert add_tool == {
        "step": "tool",
        "name": "add",
        "arguments": ["a", "b"],
        "description": "Add two numbers.",
    }
    assert divide_tool["name"] == "divide" and divide_tool["arguments"] == ["a", "b"]
    assert add["tool"] == "add" and add["arguments"] == {"a": 2, "b": 3}
    assert add["isError"] is False and add["value"] == 5.0
    assert divide["isError"] is True and divide["value"] is None
    assert divide["text"] == "Cannot divide by zero: b must be non-zero"
