"""The public API is typed: py.typed ships, and the decorators keep the function's type."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest

from ..shared import once

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src"

# The shared mypy run analyses mcpline and its dependencies without a cache: about 10 s of
# CPU, minutes on a heavily loaded machine; the other test waits for it.
pytestmark = pytest.mark.timeout(900)


def test_py_typed_is_shipped() -> None:
    assert resources.files("mcpline").joinpath("py.typed").is_file()


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


@dataclass(frozen=True)
class MypyRun:
    returncode: int
    output: str

    def errors(self, *, in_misspelt: bool) -> list[str]:
        """Error lines of misspelt.py, or of every other file."""
        return [
            line
            for line in self.output.splitlines()
            if ": error:" in line and line.startswith(f"{MISSPELT_FILE}:") == in_misspelt
        ]


MISSPELT_FILE = "misspelt.py"


def _mypy(folder: Path) -> MypyRun:
    """``mypy --strict`` of public_api.py and misspelt.py in one run (one analysis of
    mcpline and its dependencies, the expensive part, for both tests)."""
    (folder / MISSPELT_FILE).write_text(MISSPELT)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(folder / "cache"),
            str(HERE / "public_api.py"),
            MISSPELT_FILE,
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        # The editable install finds mcpline through an import hook (pyproject maps
        # mcpline._examples onto examples/), which mypy cannot follow: point it at the source.
        env={**os.environ, "MYPYPATH": str(SRC)},
        timeout=840,
    )
    return MypyRun(run.returncode, run.stdout + run.stderr)


@pytest.fixture(scope="session")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> MypyRun:
    """One run per session, shared by xdist's workers (``tests.shared``)."""
    folder = tmp_path_factory.mktemp("mypy")
    return once(tmp_path_factory, "mypy-public-api", lambda: _mypy(folder))


def test_decorated_functions_keep_their_types(mypy_run: MypyRun) -> None:
    """mypy --strict finds no error in a module that relies on the decorators' types (nor
    in mcpline it follows there): with a decorator typed ``Any`` every ``assert_type`` in it
    fails. The only errors of the run are misspelt.py's (the next test's), so mypy exits 1."""
    assert mypy_run.errors(in_misspelt=False) == [], mypy_run.output
    assert mypy_run.returncode == 1 and mypy_run.errors(in_misspelt=True), mypy_run.output


def test_misspelt_or_mistyped_options_are_type_errors(mypy_run: MypyRun) -> None:
    """Every option of `Server`, the decorators and the `Client` constructors is declared:
    a misspelt name or a wrong type is a mypy error on its line (and editors complete them)."""
    errors = mypy_run.errors(in_misspelt=True)
    flagged = {int(line.split(":")[1]) for line in errors}
    lines = MISSPELT.splitlines()
    expected = {n + 1 for n, line in enumerate(lines) if "(" in line}
    assert len(expected) == 9 and flagged == expected, mypy_run.output
