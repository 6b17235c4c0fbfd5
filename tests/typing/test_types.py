"""The public API is typed: py.typed ships, and the decorators keep the function's type."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src"


def test_py_typed_is_shipped() -> None:
    assert resources.files("mcpline").joinpath("py.typed").is_file()


def test_decorated_functions_keep_their_types(tmp_path: Path) -> None:
    """mypy --strict finds no error in a module that relies on the decorators' types: with
    a decorator typed ``Any`` every ``assert_type`` in it fails."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path),
            str(HERE / "public_api.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        # The editable install finds mcpline through an import hook (pyproject maps
        # mcpline._examples onto examples/), which mypy cannot follow: point it at the source.
        env={**os.environ, "MYPYPATH": str(SRC)},
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


MISSPELT = """
from mcpline import Server
from mcpline.client import Client

server = Server("s", page_sise=3)
server.tool(titel="x")
server.tool(task=3.5)
server.resource("r://x", mime="text/plain")
server.prompt(argument_title={})
server.add_tool(print, hiden=True)
Client.memory(server, timout=1.0)
Client.stdio("cmd", token="t")
Client.http("http://127.0.0.1:1/mcp", era=1)
"""


def test_misspelt_or_mistyped_options_are_type_errors(tmp_path: Path) -> None:
    """Every option of `Server`, the decorators and the `Client` constructors is declared:
    a misspelt name or a wrong type is a mypy error on its line (and editors complete them)."""
    checked = tmp_path / "misspelt.py"
    checked.write_text(MISSPELT)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(checked),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(SRC)},
        timeout=300,
    )
    flagged = {int(line.split(":")[1]) for line in run.stdout.splitlines() if ": error:" in line}
    lines = MISSPELT.splitlines()
    expected = {n + 1 for n, line in enumerate(lines) if "(" in line}
    assert len(expected) == 9 and flagged == expected, run.stdout
