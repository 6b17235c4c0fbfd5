"""The repository needs nothing beside it: no file of the project reads a sibling folder."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from . import wirecheck

REPO = Path(__file__).resolve().parent.parent
SIBLING = re.compile(r"""\.\./shared|parent\s*/\s*["']shared["']|["']shared["']\s*/\s*["']spec""")
SCANNED = ("src", "tests", "examples", "bench", ".ci", "Makefile", "pyproject.toml")


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        path = REPO / name
        if path.is_file():
            out.append(path)
        else:
            out += [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in out if p != Path(__file__).resolve() and p.suffix not in {".json", ".pyc"}]


def test_no_project_file_reads_a_sibling_folder() -> None:
    hits = [
        f"{p.relative_to(REPO)}:{n}"
        for p in _files()
        for n, line in enumerate(p.read_text("utf-8", "replace").splitlines(), 1)
        if SIBLING.search(line)
    ]
    assert not hits, hits


def test_the_wire_check_uses_the_schemas_shipped_in_the_package() -> None:
    key, defs = wirecheck._defs(wirecheck.MODERN)
    assert "DiscoverResult" in defs
    assert "InitializeResult" in wirecheck._defs(wirecheck.LEGACY)[1]


def test_no_script_folder_shadows_the_standard_library() -> None:
    """A script's folder comes first on ``sys.path``: a ``bench/http.py`` would be what every
    ``import http.client`` of the scripts beside it (and of urllib, starlette…) finds."""
    root = Path(__file__).resolve().parent.parent
    clashes = [
        str(path.relative_to(root))
        for folder in ("bench", "bench/servers", "examples", "examples/servers", "scripts")
        for path in sorted((root / folder).glob("*.py"))
        if path.stem in sys.stdlib_module_names
    ]
    assert clashes == []
