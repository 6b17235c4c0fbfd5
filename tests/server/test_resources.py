"""Resources through the raw driver (in memory): listing, pagination, templates, contents,
errors."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpline import PathEscapeError, ResourceNotFoundError, Server, safe_path
from mcpline.server.resources import Resources, make_resource, to_contents

from ..proc import EXAMPLES, FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

Spawn = Callable[..., ServerProcess]


@pytest.fixture
def features(spawn: Spawn) -> ServerProcess:
    return spawn(FIXTURES / "features_server.py")


def read(p: ServerProcess, uri: str) -> dict[str, Any]:
    return p.request("resources/read", {"uri": uri})


def all_pages(p: ServerProcess, method: str, key: str) -> tuple[list[dict[str, Any]], int]:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    pages = 0
    while True:
        r = p.request(method, params)["result"]
        pages += 1
        assert r["ttlMs"] == 1000 and r["cacheScope"] == "public"
        items += r[key]
        if "nextCursor" not in r:
            return items, pages
        params = {"cursor": r["nextCursor"]}


def test_list_is_paginated_and_complete(features: ServerProcess) -> None:
    resources, pages = all_pages(features, "resources/list", "resources")
    assert pages == 4  # 8 static resources, 2 per page
    uris = [r["uri"] for r in resources]
    assert uris == [
        "note://hello",
        "bin://logo",
        "multi://pair",
        "json://config",
        "broken://missing",
        "broken://crash",
        "broken://empty",
        "dir://docs/readme",
    ]
    hello = resources[0]
    assert hello == {
        "uri": "note://hello",
        "name": "hello",
        "title": "Hello",
        "description": "A constant note",
        "mimeType": "text/plain",
        "annotations": {"audience": ["user"], "priority": 0.5},
        "size": 11,
        "icons": [
            {"src": "data:image/png;base64,AAAA", "mimeType": "image/png", "sizes": ["16x16"]}
        ],
    }
    assert resources[1]["description"] == "The logo, as bytes."
    assert resources[1]["mimeType"] == "image/png"


def test_templates_list(features: ServerProcess) -> None:
    templates, _ = all_pages(features, "resources/templates/list", "resourceTemplates")
    by_template = {t["uriTemplate"]: t for t in templates}
    assert list(by_template) == [
        "items://{id}",
        "files:///{+path}",
        "search://q{?term,limit}",
        "colors://{color}/{shade}",
        "tags://{tags}",
        "who://{x}",
    ]
    assert by_template["items://{id}"] == {
        "uriTemplate": "items://{id}",
        "name": "item",
        "description": "Item by number",
        "mimeType": "text/plain",
    }
    assert all("uri" not in t for t in templates)


def test_bad_cursor_is_invalid_params(features: ServerProcess) -> None:
    r = features.request("resources/list", {"cursor": "bogus"})
    assert r["error"]["code"] == -32602
    first = features.request("resources/list")["result"]
    r = features.request("resources/templates/list", {"cursor": first["nextCursor"]})
    assert r["error"]["code"] == -32602  # a resources cursor is not a templates cursor


def test_read_text_binary_and_caching_hints(features: ServerProcess) -> None:
    r = read(features, "note://hello")["result"]
    assert r["contents"] == [
        {"uri": "note://hello", "mimeType": "text/plain", "text": "hello world"}
    ]
    assert (r["ttlMs"], r["cacheScope"], r["resultType"]) == (7, "private", "complete")
    r = read(features, "bin://logo")["result"]
    (entry,) = r["contents"]
    assert entry["mimeType"] == "image/png"
    assert base64.b64decode(entry["blob"], validate=True) == b"\x89PNG\r\n\x1a\n" + bytes(
        range(256)
    )
    assert (r["ttlMs"], r["cacheScope"]) == (60_000, "public")  # per-resource hints


def test_read_several_contents_and_json(features: ServerProcess) -> None:
    r = read(features, "multi://pair")["result"]
    assert r["contents"] == [
        {"uri": "multi://pair", "mimeType": "text/plain", "text": "first"},
        {"uri": "multi://pair#2", "mimeType": "text/markdown", "text": "# second"},
    ]
    r = read(features, "json://config")["result"]
    assert r["contents"] == [
        {"uri": "json://config", "mimeType": "application/json", "text": '{"debug":true,"level":3}'}
    ]


@pytest.mark.parametrize(
    ("uri", "text"),
    [
        ("items://42", "item 42 (int)"),
        ("files:///a/b/c.txt", "file at a/b/c.txt"),
        ("search://q?term=cats", "search 'cats' limit 10"),
        ("search://q?limit=3&term=a%20b", "search 'a b' limit 3"),
        ("colors://green/dark", "green/dark"),
        ("tags://x,y,z", "x|y|z"),
        ("who://me", "me asked by mcpline-tests"),
    ],
)
def test_template_reads_pass_typed_variables(features: ServerProcess, uri: str, text: str) -> None:
    r = read(features, uri)["result"]
    assert r["contents"][0]["uri"] == uri
    assert r["contents"][0]["text"] == text


@pytest.mark.parametrize(
    "uri",
    [
        "test://nonexistent-resource-for-conformance-testing",
        "items://101",  # the function says: no such item
        "items://abc",  # fits the template, but not the int
        "colors://purple/dark",  # not one of the Literal choices
        "broken://missing",  # FileNotFoundError
        "search://q",  # required variable absent
    ],
)
def test_unknown_resource_is_32602_with_uri(features: ServerProcess, uri: str) -> None:
    err = read(features, uri)["error"]
    assert err["code"] == -32602
    assert err["data"] == {"uri": uri}


def test_bad_uri_param_and_failures(features: ServerProcess) -> None:
    for params in ({}, {"uri": 5}, {"uri": ""}):
        assert features.request("resources/read", params)["error"]["code"] == -32602
    err = read(features, "broken://crash")["error"]
    assert err["code"] == -32603
    assert "secret" not in err["message"]
    assert read(features, "broken://empty")["error"]["code"] == -32603  # never empty contents


def test_capabilities_declare_resources_truthfully(features: ServerProcess, spawn: Spawn) -> None:
    caps = features.request("server/discover")["result"]["capabilities"]
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    quick = spawn(EXAMPLES / "quickstart.py")
    caps = quick.request("server/discover")["result"]["capabilities"]
    assert "resources" not in caps
    for method in ("resources/list", "resources/templates/list"):
        assert quick.request(method)["error"]["code"] == -32601
    assert quick.request("resources/read", {"uri": "x://y"})["error"]["code"] == -32601


def test_runtime_add_and_remove(features: ServerProcess) -> None:
    features.call("add_things")
    uris = [r["uri"] for r in all_pages(features, "resources/list", "resources")[0]]
    assert "note://late" in uris
    assert read(features, "note://late")["result"]["contents"][0]["text"] == "late note"
    features.call("remove_things")
    assert read(features, "note://late")["error"]["code"] == -32602


# --- registration errors (no process needed) ------------------------------------------------


def test_registration_rejects_mismatched_functions() -> None:
    s = Server("t")
    with pytest.raises(ValueError, match="no parameter for id"):
        s.resource("x://{id}")(lambda other: other)
    with pytest.raises(ValueError, match="not template variables"):
        s.resource("x://{id}")(lambda id, extra: id)
    with pytest.raises(ValueError, match="no value to receive"):
        s.resource("x://static")(lambda needed: needed)
    with pytest.raises(ValueError, match="scheme"):
        s.add_resource("no-scheme", "text")
    with pytest.raises(ValueError, match="ttl_ms"):
        s.add_resource("x://a", "text", ttl_ms=-1)
    with pytest.raises(ValueError):
        s.add_resource("x://{unclosed", "text")
    s.add_resource("x://a", "text")
    with pytest.raises(ValueError, match="already registered"):
        s.add_resource("x://a", "again")
    with pytest.raises(KeyError):
        s.remove_resource("x://never")


def test_contents_shaping() -> None:
    assert to_contents("u://a", None, b"\x00") == [
        {"uri": "u://a", "mimeType": "application/octet-stream", "blob": "AA=="}
    ]
    assert to_contents("u://a", "text/csv", {"text": "a,b"}) == [
        {"uri": "u://a", "mimeType": "text/csv", "text": "a,b"}
    ]
    assert to_contents("u://a", None, {"blob": b"hi"})[0]["blob"] == "aGk="
    with pytest.raises(ValueError):
        to_contents("u://a", None, {"text": "x", "blob": "eA=="})
    with pytest.raises(ValueError):
        to_contents("u://a", None, [])
    res = make_resource("u://{n}", lambda n: n, name="n")
    assert res.definition == {"uriTemplate": "u://{n}", "name": "n"}


# --- path traversal -----------------------------------------------------------------------------


def resolver(*templates: str) -> Resources:
    table = Resources()
    for t in templates:
        table.add(make_resource(t, lambda **kw: kw, name=t))
    return table


@pytest.mark.parametrize(
    "uri",
    [
        "x://seg/..%2F..%2Fetc%2Fpasswd",
        "x://seg/..%5C..%5Cwindows",
        "x://label.a%2Fb",
        "x://path/a%2Fb",
        "x://list/a/b%2Fc",
        "x://param;p=..%2Fx",
    ],
)
def test_path_segment_variables_never_carry_a_separator(uri: str) -> None:
    table = resolver(
        "x://seg/{name}", "x://label{.l}", "x://path{/p}", "x://list{/l*}", "x://param{;p}"
    )
    with pytest.raises(ResourceNotFoundError) as err:
        table.resolve(uri)
    assert err.value.code == -32602 and err.value.uri == uri
    assert not table.watchable(uri)


def test_reserved_and_query_variables_may_carry_a_separator() -> None:
    table = resolver("x://seg/{name}", "x://r/{+path}", "x://q{?path}", "x://f{#path}")
    assert table.resolve("x://seg/..")[1] == {"name": ".."}
    assert table.resolve("x://r/..%2Fa/../b")[1] == {"path": "../a/../b"}
    assert table.resolve("x://q?path=..%2Fa")[1] == {"path": "../a"}
    assert table.resolve("x://f#../a")[1] == {"path": "../a"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "f.txt").write_text("in")
    (tmp_path / "outside.txt").write_text("out")
    (tmp_path / "root" / "out-link").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "root" / "in-link").symlink_to(tmp_path / "root" / "sub")
    return tmp_path / "root"


def test_safe_path_resolves_inside_the_root(root: Path) -> None:
    inside = root / "sub" / "f.txt"
    assert safe_path(root, "sub/f.txt") == inside
    assert safe_path(str(root), ["sub", "f.txt"]) == inside
    assert safe_path(root, "in-link/f.txt") == inside
    assert safe_path(root, "sub/new.txt") == root / "sub" / "new.txt"
    assert safe_path(root, "") == root


@pytest.mark.parametrize(
    "value",
    [
        "../outside.txt",
        "sub/../../outside.txt",
        "sub/..",
        ["sub", "..", "..", "outside.txt"],
        "..\\outside.txt",
        "/etc/passwd",
        "\\etc\\passwd",
        "C:x.txt",
        "C:\\x.txt",
        "\\\\host\\share\\x.txt",
        "//host/share/x.txt",
        "f.txt\x00.png",
        "out-link",
    ],
)
def test_safe_path_refuses_what_leaves_the_root(root: Path, value: str | list[str]) -> None:
    with pytest.raises(PathEscapeError):
        safe_path(root, value)
    assert issubclass(PathEscapeError, ValueError)
