"""RFC 6570 expansion (the RFC's own section 3.2 examples) and matching back."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcpline.protocol.uritemplate import UriTemplate, expand, is_template

VALUES: dict[str, Any] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

RFC_EXAMPLES = [
    # 3.2.2 simple string expansion
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    # 3.2.3 reserved expansion
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    # 3.2.4 fragment expansion
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    # 3.2.5 label expansion
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("www{.dom*}", "www.example.com"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("X{.empty_keys}", "X"),
    ("X{.empty_keys*}", "X"),
    # 3.2.6 path segments
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    # 3.2.7 path-style parameters
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    # 3.2.8 form-style query
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    # 3.2.9 form-style query continuation
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
]


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_rfc6570_expansion(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(VALUES) == expected


def test_expand_helpers_and_unicode() -> None:
    assert expand("file:///{+path}", path="a b/ü.txt") == "file:///a%20b/%C3%BC.txt"
    assert expand("n/{n}/{flag}", n=7, flag=True) == "n/7/true"
    assert UriTemplate("x{?a}").variables == ("a",)
    assert is_template("a/{b}") and not is_template("a/b")
    assert not UriTemplate("test://static").is_template


@pytest.mark.parametrize(
    "bad",
    [
        "{",
        "}",
        "a}b",
        "{}",
        "{=x}",
        "{a b}",
        "{x:0}",
        "{x:10000}",
        "{x:3*}",
        "a b{x}",
        "{x,}",
        "{.}",
    ],
)
def test_malformed_templates_raise(bad: str) -> None:
    with pytest.raises(ValueError):
        UriTemplate(bad)


def test_prefix_on_composite_value_raises() -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{list:3}").expand(list=["a", "b"])


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/a%20b/data", {"id": "a b"}),
        ("test://template/{id}/data", "test://template/a%2Fb/data", {"id": "a/b"}),
        ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
        ("file:///{+path}{?rev}", "file:///a/b?rev=3", {"path": "a/b", "rev": "3"}),
        ("/search{?q,limit}", "/search?limit=5&q=x%20y", {"q": "x y", "limit": "5"}),
        ("/search{?q,limit}", "/search", {}),
        ("/search{?q}{&page}", "/search?q=a&page=2", {"q": "a", "page": "2"}),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024", {"x": "1024"}),
        ("/items{?tag*}", "/items?tag=a&tag=b", {"tag": ["a", "b"]}),
        ("{/list*}", "/red/green/blue", {"list": ["red", "green", "blue"]}),
        ("X{.list*}", "X.red.green.blue", {"list": ["red", "green", "blue"]}),
        ("{;list*}", ";list=red;list=green", {"list": ["red", "green"]}),
        ("{;v,empty,who}", ";v=6;empty;who=fred", {"v": "6", "empty": "", "who": "fred"}),
        ("{/var:1,var}", "/v/value", {"var": "value"}),
        ("{x,y}", "1024,768", {"x": "1024", "y": "768"}),
        ("{#path,x}/here", "#/foo/bar,1024/here", {"path": "/foo/bar", "x": "1024"}),
        ("users/{id}", "users/42", {"id": "42"}),
        (
            "repo://{owner}/{name}/issues/{n}",
            "repo://a/b/issues/9",
            {"owner": "a", "name": "b", "n": "9"},
        ),
    ],
)
def test_match(template: str, uri: str, expected: dict[str, Any]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template/1/2/data"),
        ("test://template/{id}/data", "test://other/1/data"),
        ("test://template/{id}/data", "test://template/1/data/extra"),
        ("test://template/{id}/data", "test://template/%FF/data"),
        ("/search{?q}", "/search?q=1&unknown=2"),
        ("{/var:1,var}", "/x/value"),
        ("static://thing", "static://thing2"),
    ],
)
def test_no_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


@pytest.mark.parametrize(
    "template",
    ["test://template/{id}/data", "file:///{+path}", "/s{?q,limit}", "{/a,b}", "X{.a,b}", "{;a,b}"],
)
def test_expand_then_match_round_trips(template: str) -> None:
    t = UriTemplate(template)
    values = {
        name: f"v{i} x/ü" if "+" not in template else f"v{i}/x"
        for i, name in enumerate(t.variables)
    }
    uri = t.expand(values)
    assert t.match(uri) == values


# --- matching is linear (a URI is untrusted input) -------------------------------------------

KIB64 = 64 * 1024


def fill(head: str, unit: str, tail: str) -> str:
    """``head + unit * k + tail``, cut to exactly 64 KiB."""
    k = KIB64 - len(head) - len(tail)
    return head + (unit * (k // len(unit) + 1))[:k] + tail


# (template, 64 KiB URI, whether it matches). Each template has variables that can absorb one
# another's text, so a backtracking matcher tries every split (n**k of them) before failing.
ADVERSARIAL = [
    ("file:///{name}.{ext}", fill("file:///", "a", ".txt"), True),
    ("file:///{name}.{ext}", fill("file:///", ".", "?"), False),
    ("file:///{name}.{ext}", fill("file:///", "a.", "/"), False),
    ("test://{+a}/{+b}/{+c}/end", fill("test://", "/", "x"), False),
    ("test://{+a}/{+b}/{+c}/end", fill("test://", "/", "end"), True),
    ("test://{+a}/{+b}/{+c}/end", fill("test://", "a/", "/en"), False),
    ("x:{/path*}{/x*}", fill("x:", "/", "?"), False),
    ("x:{/path*}{/x*}", fill("x:", "/a", ""), True),
    ("x:{/path*}{/x*}end", fill("x:", "/a", "/en"), False),
    ("x:{a}{b}{c}", fill("x:", "a", "/"), False),
    ("x:{a}{b}{c}", fill("x:", "a", ""), True),
    ("x:{+a}{+b}", fill("x:", "x", ""), True),
    ("x:{+a}{+b}z", fill("x:", "z", "y"), False),
    ("x:{?q*}", fill("x:?", "q=b&", ""), True),
    ("x:{?q*}", fill("x:?", "a=b&", "#"), False),
    ("x:{?q,r}{&s*}", fill("x:?", "s=%41&", ""), True),
    ("x:{a,b,c}", fill("x:", ",", "/"), False),
    ("x:{#a,b,c}/end", fill("x:#", ",/", "en"), False),
    ("x:{;a*}{;b*}", fill("x:", ";a", "=="), True),
    ("x:{;a*}{;b*}", fill("x:", ";a=;b", "/"), False),
    ("x:{.a*}{.b*}", fill("x:", ".", "/"), False),
    ("x:{.a,b}{.c*}.{d}", fill("x:", ".", ""), True),
    ("x:{a}-{b}-{c}-{d}", fill("x:", "-", "/"), False),
    ("x:{a:3}{b:5}{+c}{d:9999}", fill("x:", "%41", ""), True),
    ("x:{+a:9999}{+b:9999}{c}", fill("x:", "a", "/"), False),
    ("x:{/a*}{+b}{.c*}{+d}{;e*}{?f*}", fill("x:", "/.;", ""), True),
]


@pytest.mark.parametrize(("template", "uri", "matches"), ADVERSARIAL)
def test_matching_a_64_kib_uri_never_blocks(template: str, uri: str, matches: bool) -> None:
    assert len(uri) == KIB64
    t = UriTemplate(template)
    # This thread's CPU time, the least of three tries: a backtracking blow-up is work (n**k
    # splits tried) every time, while a busy machine (the suite's parallel workers) can slow
    # any one try.
    elapsed = float("inf")
    for _ in range(3):
        start = time.thread_time()
        got = t.match(uri)
        elapsed = min(elapsed, time.thread_time() - start)
    assert (got is not None) == matches
    assert elapsed < 0.050, f"{template!r} took {elapsed * 1000:.1f} ms of CPU on a 64 KiB URI"


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        # Left to right, each variable takes the longest text the rest allows ...
        ("file:///{name}.{ext}", "file:///a.b.c", {"name": "a.b", "ext": "c"}),
        ("x:{a}{b}", "x:ab", {"a": "ab", "b": ""}),
        ("x:{a}-{b}-{c}", "x:1-2-3-4", {"a": "1-2", "b": "3", "c": "4"}),
        ("x:{/a*}{/b*}", "x:/1/2/3", {"a": ["1", "2", "3"]}),
        ("x:{.a,b}", "x:.1.2", {"a": "1", "b": "2"}),
        ("x:{a:2}{b}", "x:%41%42%43", {"a": "AB", "b": "C"}),
        # ... except reserved and fragment variables, which take the shortest.
        ("x:{+a}{+b}", "x:ab", {"a": "", "b": "ab"}),
        ("x:{+a}/{+b}/{+c}/end", "x:1/2/3/4/end", {"a": "1", "b": "2", "c": "3/4"}),
        ("x:{#a}/{+b}", "x:#1/2/3", {"a": "1", "b": "2/3"}),
        ("x:{;a*}{;b}", "x:;a=1;a;b=2", {"a": ["1", ""], "b": "2"}),
    ],
)
def test_ambiguous_splits_are_deterministic(
    template: str, uri: str, expected: dict[str, Any]
) -> None:
    t = UriTemplate(template)
    assert t.match(uri) == expected
    assert t.match(uri) == expected


def test_a_uri_is_not_split_inside_a_pct_triplet() -> None:
    # No expansion of "{a}4" ends in "%41"'s middle: "%4" + "1" is not a split.
    assert UriTemplate("x:{a}1").match("x:%41") is None
    assert UriTemplate("x:{a}1").match("x:%411") == {"a": "A"}
    assert UriTemplate("x:{+a}%2F{+b}").match("x:a%2Fb%2Fc") == {"a": "a", "b": "b/c"}


def test_ambiguous_templates_still_match_ordinary_uris() -> None:
    assert UriTemplate("file:///{name}.{ext}").match("file:///" + "a" * 300 + ".txt") == {
        "name": "a" * 300,
        "ext": "txt",
    }
    assert UriTemplate("test://{+a}/{+b}/{+c}/end").match("test://x/y/z/end") == {
        "a": "x",
        "b": "y",
        "c": "z",
    }


def test_unambiguous_templates_match_long_uris() -> None:
    # Variables delimited by characters they cannot contain have no length limit.
    long = "v" * 200_000
    got = UriTemplate("file:///{a}/{b}/{c}").match(f"file:///{long}/{long}/{long}")
    assert got == {"a": long, "b": long, "c": long}
    assert UriTemplate("x://{/a,b,c}").match(f"x:///{long}/{long}/{long}") == got
    assert UriTemplate("file:///{+path}").match("file:///" + long) == {"path": long}
