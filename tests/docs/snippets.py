"""Code blocks of the documentation, read out of the Markdown (``tests/docs/test_snippets.py``
runs them).

The conventions, which docs/index.md states for readers and writers:

* Every fenced ``python`` block of ``docs/**/*.md`` and ``README.md`` is run. The blocks of
  one page run in order in one namespace (a later block may use what an earlier one
  defined), with the repository as the working directory.
* A block may use ``await`` at its top level (``async with Client.memory(server) as c:``);
  it then runs in a fresh event loop, as ``asyncio.run`` would run it.
* ``Server.run`` does nothing while the blocks run, so a block may end with
  ``server.run()`` as a file would; a block that needs a running server talks to it with
  ``Client.memory(server)`` (in the same process) or starts a file with ``Client.stdio``.
* An HTML comment on the line before a block changes what is done with it:

  ``<!-- no-run: REASON -->``
      The block is not run (the reason is required, and shown in the test's output).
  ``<!-- fresh -->``
      The block starts a new namespace.
  ``<!-- file: NAME -->``
      The block is the file NAME of a small project (not run by itself). When a page has
      ``test_*.py`` files, pytest runs that project in a temporary directory, and every test
      in it must pass.
  ``<!-- run: sh -->`` (on a ``sh`` block)
      Each command line of the block is run (``mcpline`` and ``python`` are this
      environment's), from the repository, and must exit 0.

Any other comment of the form ``<!-- no-run`` / ``<!-- file`` / ``<!-- run`` that does not
parse is an error, so a misspelt marker cannot hide a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DOCS = REPO / "docs"

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*(?P<body>.*?)\s*-->\s*$")
MARKER_WORDS = ("no-run", "fresh", "file", "run")
PYTHON = {"python", "py", "python3", "pycon"}
SHELL = {"sh", "bash", "shell", "console"}


@dataclass(frozen=True)
class Block:
    """One fenced code block."""

    page: Path
    line: int
    """The 1-based line of the block's first code line in ``page``."""
    lang: str
    code: str
    marker: str | None
    """The marker comment's body (``no-run: …``, ``fresh``, ``file: …``, ``run: sh``)."""

    @property
    def where(self) -> str:
        return f"{rel(self.page)}:{self.line}"

    @property
    def no_run_reason(self) -> str | None:
        if self.marker and self.marker.startswith("no-run"):
            return self.marker.partition(":")[2].strip()
        return None

    @property
    def file_name(self) -> str | None:
        if self.marker and self.marker.startswith("file"):
            return self.marker.partition(":")[2].strip()
        return None


class MarkerError(ValueError):
    """A marker comment that does not parse, or sits where it cannot apply."""


def rel(page: Path) -> str:
    """``page`` relative to the repository (as it is when it lies outside)."""
    return str(page.relative_to(REPO)) if page.is_relative_to(REPO) else str(page)


def pages() -> list[Path]:
    """Every page whose blocks are run: the site's pages and the README."""
    return sorted(DOCS.rglob("*.md")) + [REPO / "README.md"]


def _check_marker(body: str, lang: str, where: str) -> None:
    word = re.split(r"[\s:]", body, maxsplit=1)[0]
    if word == "no-run":
        if not re.fullmatch(r"no-run:\s*\S.*", body):
            raise MarkerError(f"{where}: '<!-- no-run: REASON -->' needs a reason")
    elif word == "fresh":
        if body != "fresh":
            raise MarkerError(f"{where}: write '<!-- fresh -->'")
    elif word == "file":
        if not re.fullmatch(r"file:\s*[\w./-]+\.py", body):
            raise MarkerError(f"{where}: write '<!-- file: NAME.py -->'")
    elif word == "run":
        if body != "run: sh":
            raise MarkerError(f"{where}: the only run marker is '<!-- run: sh -->'")
        if lang not in SHELL:
            raise MarkerError(f"{where}: '<!-- run: sh -->' belongs before a sh block")
        return
    if lang not in PYTHON:
        raise MarkerError(f"{where}: '<!-- {body} -->' belongs before a python block")


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order, each with the marker on the line before it."""
    lines = page.read_text("utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        info = m["info"].strip()
        lang = info.split()[0].lstrip(".{").lower() if info else ""
        start = i + 1
        j = start
        while j < len(lines):
            close = lines[j].strip()
            if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                break
            j += 1
        body = [
            ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln in lines[start:j]
        ]
        marker = None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mm = MARKER.match(lines[k])
            if mm and re.match(rf"({'|'.join(MARKER_WORDS)})\b", mm["body"]):
                marker = mm["body"]
                _check_marker(marker, lang, f"{rel(page)}:{k + 1}")
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marker))
        i = j + 1
    return out


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in PYTHON]


__all__ = ["Block", "DOCS", "MarkerError", "REPO", "blocks", "pages", "python_blocks", "rel"]
