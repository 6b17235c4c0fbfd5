"""examples/files.py through the raw driver (in memory): reads stay inside the served directory.

A secret file sits next to the served root (and a symbolic link inside the root points at
it); no ``resources/read`` URI, encoded or not, may return its content.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

SECRET = "TOP-SECRET-outside-the-root"
RESOURCE_NOT_FOUND = -32602


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("inside")
    (root / "sub" / "inner.txt").write_text("deeper")
    (tmp_path / "secret.txt").write_text(SECRET)
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "linkdir").symlink_to(tmp_path)
    return root


@pytest.fixture
def files(spawn: Callable[..., ServerProcess], tree: Path) -> ServerProcess:
    return spawn(EXAMPLES / "files.py", str(tree))


def read(p: ServerProcess, uri: str) -> dict[str, Any]:
    return p.request("resources/read", {"uri": uri})


@pytest.mark.parametrize(
    ("uri", "text"),
    [
        ("file:///ok.txt", "inside"),
        ("file:///sub/inner.txt", "deeper"),
        ("file:///sub%2Finner.txt", "deeper"),
        ("files://by-name/ok.txt", "inside"),
    ],
)
def test_files_inside_the_root_are_served(files: ServerProcess, uri: str, text: str) -> None:
    r = read(files, uri)
    assert r["result"]["contents"][0]["text"] == text


def escapes(tree: Path) -> list[str]:
    secret = tree.parent / "secret.txt"
    return [
        # A simple {name} variable: a decoded '/' or '\' never matches.
        "files://by-name/..%2Fsecret.txt",
        "files://by-name/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "files://by-name/..%5Csecret.txt",
        f"files://by-name/{str(secret).replace('/', '%2F')}",
        "files://by-name/link.txt",
        # A reserved {+path} variable carries '/', and safe_path refuses what leaves the root.
        "file:///../secret.txt",
        "file:///..%2Fsecret.txt",
        "file:///%2E%2E/secret.txt",
        "file:///sub/../../secret.txt",
        "file:///sub%2F..%2F..%2Fsecret.txt",
        "file:///..%5Csecret.txt",
        f"file:///{secret}",
        f"file:///{str(secret).replace('/', '%2F')}",
        "file:///link.txt",
        "file:///linkdir/secret.txt",
        "file:///C:%5Csecret.txt",
        "file:///%5C%5Chost%5Cshare%5Csecret.txt",
        "file:///ok.txt%00",
    ]


def test_no_uri_reads_outside_the_root(files: ServerProcess, tree: Path) -> None:
    answers = {uri: read(files, uri) for uri in escapes(tree)}
    leaks = [uri for uri, r in answers.items() if SECRET in json.dumps(r)]
    assert leaks == []
    for uri, r in answers.items():
        assert "result" not in r, uri
        assert r["error"]["code"] == RESOURCE_NOT_FOUND, (uri, r)
        assert r["error"]["data"] == {"uri": uri}
