"""Every code snippet of the documentation runs (the conventions: tests/docs/snippets.py).

One test per page: its ``python`` blocks run in order in one namespace, in this process
(``Server.run`` made a no-op; top-level ``await`` run in a fresh event loop). A block that
raises fails the test with the page and the line of the block. Pages with ``<!-- file: -->``
blocks also get their small project run by pytest, and ``<!-- run: sh -->`` blocks have their
commands run. Everything a page writes goes to a temporary directory of its own, so the pages
run side by side on the xdist workers.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import shlex
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from . import snippets
from .snippets import REPO, Block

PAGES = [p for p in snippets.pages() if snippets.blocks(p)]
RUN_PAGES = [p for p in PAGES if any(not b.no_run_reason for b in snippets.python_blocks(p))]
SH_BLOCKS = [b for p in PAGES for b in snippets.blocks(p) if b.marker == "run: sh"]
BIN = Path(sys.executable).parent


def _id(page: Path) -> str:
    return snippets.rel(page)


def _run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Run one block in ``namespace``; its line numbers are the page's."""
    source = "\n" * (block.line - 1) + block.code
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(source, str(block.page), "exec", flags=flags, dont_inherit=True)
    if code.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(code, namespace))
    else:
        exec(code, namespace)


def _explain(block: Block, exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    here = [f for f in frames if f.filename == str(block.page)]
    line = here[-1].lineno if here else block.line
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"{_id(block.page)}:{line}: the block at line {block.line} failed\n{tb}"


@pytest.fixture
def quiet_server_run(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``Server.run`` records its calls instead of serving."""
    from mcpline.server.server import Server

    calls: list[tuple[Any, ...]] = []

    def run(self: Server, *args: Any, **kwargs: Any) -> None:
        calls.append((self, args, kwargs))

    monkeypatch.setattr(Server, "run", run)
    return calls


@pytest.mark.parametrize("page", RUN_PAGES, ids=_id)
def test_python_blocks_run(
    page: Path,
    quiet_server_run: list[tuple[Any, ...]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MCPLINE_SNIPPET_TMP", str(tmp_path))
    files: dict[str, str] = {}
    namespace: dict[str, Any] = {}
    ran = 0
    for block in snippets.python_blocks(page):
        if block.no_run_reason:
            continue
        if block.file_name:
            files[block.file_name] = block.code
            continue
        if block.marker == "fresh" or not namespace:
            namespace = {"__name__": "__snippet__", "__file__": str(page)}
        try:
            _run_block(block, namespace)
        except BaseException as exc:  # noqa: BLE001 - reported with the page and line
            if isinstance(exc, KeyboardInterrupt):
                raise
            pytest.fail(_explain(block, exc), pytrace=False)
        ran += 1
    tested = any(Path(name).name.startswith("test_") for name in files)
    if tested:
        _run_project(page, files, tmp_path / "project")
    assert ran or tested, f"{_id(page)}: no block ran and no test_ file was tested"


def _run_project(page: Path, files: dict[str, str], where: Path) -> None:
    """The page's files as a project, tested by pytest in a process of its own."""
    where.mkdir()
    for name, code in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(code, "utf-8")
    (where / "pytest.ini").write_text("[pytest]\n", "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary = proc.stdout.strip().splitlines()[-1:] or [""]
    assert proc.returncode == 0 and " passed" in summary[0], (
        f"{_id(page)}: pytest on the page's files ({', '.join(files)}) failed:\n"
        f"{proc.stdout}\n{proc.stderr}"
    )


def _argv(words: list[str]) -> list[str]:
    head = words[0]
    if head == "mcpline":
        return [str(BIN / "mcpline"), *words[1:]]
    if head in ("python", "python3"):
        return [sys.executable, *words[1:]]
    raise AssertionError(f"a run: sh line starts with mcpline or python, not {head!r}")


@pytest.mark.parametrize("block", SH_BLOCKS, ids=lambda b: b.where)
def test_shell_examples_run(block: Block) -> None:
    commands = [ln for ln in block.code.splitlines() if ln.strip() and not ln.startswith("#")]
    assert commands, f"{block.where}: an empty run: sh block"
    for n, line in enumerate(commands):
        words = shlex.split(line, comments=True)
        argv = _argv(words)
        if "--" in words:  # the server command after --: this environment's python as well
            cut = words.index("--")
            argv = argv[: cut + 1] + _argv(words[cut + 1 :])
        proc = subprocess.run(
            argv, cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        assert proc.returncode == 0, (
            f"{block.where} (command {n + 1}): {line}\nexit {proc.returncode}\n"
            f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
        )


def test_every_marker_parses_and_every_page_is_read() -> None:
    """Markers are checked while the pages are read (`snippets.MarkerError`); the counts guard
    against a parser that silently finds nothing, and keep blocks that do not run rare."""
    found = [b for p in snippets.pages() for b in snippets.python_blocks(p)]
    not_run = [b.where for b in found if b.no_run_reason]
    assert len(found) >= 50, len(found)
    assert len(not_run) <= 0.15 * len(found), not_run


def test_the_parser_reads_markers_fences_and_indented_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text\n\n<!-- no-run: needs a network -->\n```python\nimport nowhere\n```\n\n"
        '=== "tab"\n\n    ```python\n    x = 1\n    ```\n\n'
        "````markdown\n```python\nnot a block\n```\n````\n",
        "utf-8",
    )
    found = snippets.blocks(page)
    assert [(b.lang, b.line, b.code) for b in found] == [
        ("python", 5, "import nowhere\n"),
        ("python", 11, "x = 1\n"),
        ("markdown", 15, "```python\nnot a block\n```\n"),
    ]
    assert found[0].no_run_reason == "needs a network"
    bad = tmp_path / "bad.md"
    bad.write_text("<!-- no-run -->\n```python\nx\n```\n", "utf-8")
    with pytest.raises(snippets.MarkerError, match="needs a reason"):
        snippets.blocks(bad)
