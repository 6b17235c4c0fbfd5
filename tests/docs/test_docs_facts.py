"""Facts the docs state that a port from FastMCP relies on, checked against the code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcpline.testing

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
MCPLINE = str(Path(sys.executable).with_name("mcpline"))


def test_fastmcp_has_the_completion_decorator_the_table_names() -> None:
    fastmcp = pytest.importorskip("fastmcp")
    row = next(
        line
        for line in (DOCS / "coming-from-fastmcp.md").read_text().splitlines()
        if line.startswith("| completion |")
    )
    assert "`@mcp.completion`" in row
    assert callable(fastmcp.FastMCP("x").completion)


def test_the_config_example_of_the_cli_page_is_what_the_cli_says(tmp_path: Path) -> None:
    page = (DOCS / "cli.md").read_text()
    example = re.search(r"```json\n(\{\"mcpServers\".*?)```", page, re.S)
    said = re.search(r"^mcpline tools: server 'web' .*$", page, re.M)
    assert example is not None and said is not None
    config = tmp_path / "mcp.json"
    config.write_text(example[1])
    json.loads(example[1])
    env = {k: v for k, v in os.environ.items() if k not in ("WEB_KEY", "WEB_BASE")}
    proc = subprocess.run(
        [MCPLINE, "tools", "--config", str(config), "--name", "web"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2 and proc.stderr.strip() == said[0]


def test_the_testing_docstring_and_page_agree_on_pytest_asyncio() -> None:
    doc = " ".join((mcpline.testing.__doc__ or "").split())
    page = " ".join((DOCS / "testing.md").read_text().split())
    for words in ("auto mode", "@pytest.mark.anyio"):
        assert words in doc and words in page
    assert "docs/testing.md" in doc
    readme = (REPO / "README.md").read_text()
    assert "fixture for it, see\n[docs/testing.md](docs/testing.md)" in readme
