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
