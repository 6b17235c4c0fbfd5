"""The pure rules of the HTTP binding: mirrored headers, Base64 sentinels, media types, status
mapping, Origin/Host policy and bearer challenges."""

from __future__ import annotations

import pytest

from mcpline.protocol.headers import HeaderParam
from mcpline.spec import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcpline.transports.http.headers import (
    HeaderError,
    Headers,
    accepts,
    decode_value,
    is_json,
    is_modern_version,
    mirror_problem,
    status_for,
    value_at,
    value_matches,
)
from mcpline.transports.http.security import (
    Gatekeeper,
    bearer_token,
    challenge,
    check_metadata,
    metadata_url,
    split_host,
)


def hdrs(**values: str | list[str]) -> Headers:
    raw = []
    for name, value in values.items():
        for v in value if isinstance(value, list) else [value]:
            raw.append((name.replace("_", "-").encode(), v.encode("latin-1")))
    return Headers(raw)


# --- reading headers -------------------------------------------------------------------------


def test_names_are_case_insensitive_values_trimmed_of_ows_only() -> None:
    h = Headers([(b"MCP-METHOD", b" \ttools/list\t ")])
    assert h.one("mcp-method") == "tools/list"
    assert "mcp-method" in h and "mcp-name" not in h
    assert h.one("mcp-name") is None


def test_a_repeated_header_is_an_error_where_one_value_is_needed() -> None:
    h = hdrs(mcp_method=["tools/list", "tools/list"])
    with pytest.raises(HeaderError, match="repeated"):
        h.one("mcp-method")
    assert h.get("mcp-method") == "tools/list, tools/list"


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("us-west1", "us-west1"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        ("=?base64?IHBhZGRlZCA=?=", " padded "),
        ("SGVsbG8=", "SGVsbG8="),  # no wrapper: literal
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: literal
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are case-sensitive
        ("=?base64??=", ""),
        ("us west 1", "us west 1"),
    ],
)
def test_sentinel_decoding(raw: str, decoded: str) -> None:
    assert decode_value(raw, "Mcp-Name") == decoded


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # padding missing
        "=?base64?SGVs!!!bG8=?=",  # outside the alphabet
        "=?base64?/w==?=",  # not UTF-8
        "caf\xe9",  # not visible ASCII
        "a\x01b",  # control character
    ],
)
def test_invalid_values_are_refused(raw: str) -> None:
    with pytest.raises(HeaderError):
        decode_value(raw, "Mcp-Param-Region")


def test_values_match_by_json_type() -> None:
    assert value_matches("us-west1", "us-west1") and not value_matches("US-WEST1", "us-west1")
    assert value_matches("42", 42) and value_matches("42.0", 42) and value_matches("-7", -7)
    assert not value_matches("42", 43) and not value_matches("forty", 42)
    assert not value_matches("NaN", 1) and not value_matches("Infinity", 1)
    assert value_matches("0.1", 0.1)
    assert value_matches("true", True) and value_matches("false", False)
    assert not value_matches("True", True) and not value_matches("1", True)
    assert not value_matches("{}", {"a": 1})
    assert value_at({"a": {"b": 3}}, ("a", "b")) == 3
    assert value_at({"a": 1}, ("a", "b")) is None and value_at(None, ("a",)) is None


# --- mirrored headers of a request -------------------------------------------------------------


CALL = {"name": "routed", "arguments": {"region": "us-west1", "count": 3, "verbose": True}}
PARAMS = [
    HeaderParam("Region", ("region",), "string"),
    HeaderParam("Count", ("count",), "integer"),
    HeaderParam("Verbose", ("verbose",), "boolean"),
]


def good(**over: str | None) -> Headers:
    values: dict[str, str | None] = {
        "mcp_method": "tools/call",
        "mcp_name": "routed",
        "mcp_param_region": "us-west1",
        "mcp_param_count": "3",
        "mcp_param_verbose": "true",
    }
    values.update(over)
    return hdrs(**{k: v for k, v in values.items() if v is not None})


def test_matching_headers_pass() -> None:
    assert mirror_problem("tools/call", CALL, good(), PARAMS) is None
    assert mirror_problem("tools/call", CALL, good(mcp_name="  routed  "), PARAMS) is None
    assert mirror_problem("tools/list", {}, hdrs(mcp_method="tools/list")) is None
    encoded = good(mcp_name="=?base64?cm91dGVk?=", mcp_param_count="3.0")
    assert mirror_problem("tools/call", CALL, encoded, PARAMS) is None


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"mcp_method": None}, "Mcp-Method header is missing"),
        ({"mcp_method": "prompts/list"}, "does not match the body's method"),
        ({"mcp_method": "TOOLS/CALL"}, "does not match the body's method"),
        ({"mcp_name": None}, "Mcp-Name header is missing"),
        ({"mcp_name": "wrong_tool_name"}, "does not match params.name"),
        ({"mcp_name": "=?base64?cm91dGVk?="[:-3] + "?="}, "not valid Base64"),
        ({"mcp_param_region": None}, "Mcp-Param-Region header is missing"),
        ({"mcp_param_region": "eu-west1"}, "Mcp-Param-Region header does not match"),
        ({"mcp_param_count": "4"}, "Mcp-Param-Count header does not match"),
        ({"mcp_param_verbose": "True"}, "Mcp-Param-Verbose header does not match"),
        ({"mcp_param_region": "=?base64?SGVsbG8?=?="}, "not valid Base64"),
    ],
)
def test_each_mismatch_is_named(over: dict[str, str | None], why: str) -> None:
    problem = mirror_problem("tools/call", CALL, good(**over), PARAMS)
    assert problem is not None and why in problem


def test_absent_or_null_arguments_expect_no_header_and_refuse_one() -> None:
    call = {"name": "routed", "arguments": {"region": "us", "count": None}}
    h = hdrs(mcp_method="tools/call", mcp_name="routed", mcp_param_region="us")
    assert mirror_problem("tools/call", call, h, PARAMS) is None
    stray = hdrs(
        mcp_method="tools/call", mcp_name="routed", mcp_param_region="us", mcp_param_count="1"
    )
    problem = mirror_problem("tools/call", call, stray, PARAMS)
    assert problem is not None and "argument is absent" in problem


def test_resources_read_mirrors_the_uri_and_a_bodyless_name_is_left_to_the_body() -> None:
    uri = "file:///path/to/file%20name.txt"
    h = hdrs(mcp_method="resources/read", mcp_name=uri)
    assert mirror_problem("resources/read", {"uri": uri}, h) is None
    assert mirror_problem("resources/read", {"uri": "other"}, h) is not None
    assert mirror_problem("tools/call", {"name": 3}, hdrs(mcp_method="tools/call")) is None


# --- media types, eras, statuses -----------------------------------------------------------------


def test_accept_and_content_type() -> None:
    both = "application/json, text/event-stream"
    assert accepts(both, "application/json") and accepts(both, "text/event-stream")
    assert accepts("text/event-stream;q=0.9, application/json", "text/event-stream")
    assert accepts("*/*", "text/event-stream") and accepts("application/*", "application/json")
    assert not accepts("application/json", "text/event-stream") and not accepts(None, "a/b")
    assert is_json("application/json") and is_json("Application/JSON; charset=utf-8")
    assert not is_json("text/plain") and not is_json(None) and not is_json("application/json, x")


def test_the_era_follows_the_protocol_version_header() -> None:
    assert is_modern_version("2026-07-28") and is_modern_version("v999.0.0")
    assert not is_modern_version("2025-11-25") and not is_modern_version("2025-03-26")
    assert not is_modern_version(None)


def test_status_mapping() -> None:
    assert status_for(METHOD_NOT_FOUND) == 404
    for code in (
        INVALID_PARAMS,
        HEADER_MISMATCH,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        UNSUPPORTED_PROTOCOL_VERSION,
        PARSE_ERROR,
        INVALID_REQUEST,
    ):
        assert status_for(code) == 400
    assert status_for(INTERNAL_ERROR) == 200 and status_for(-32000) == 200


# --- Origin, Host, tokens ----------------------------------------------------------------------


LOOPBACK = ("127.0.0.1", 8000)


def test_origins() -> None:
    gate = Gatekeeper()
    assert gate.origin_allowed("http://127.0.0.1:8000", LOOPBACK)
    assert gate.origin_allowed("http://localhost:8000", LOOPBACK)
    assert gate.origin_allowed("http://[::1]:8000", LOOPBACK)
    assert not gate.origin_allowed("http://localhost:3000", LOOPBACK)  # another local site
    assert not gate.origin_allowed("http://evil.example.com", LOOPBACK)
    assert not gate.origin_allowed("null", LOOPBACK)
    assert not gate.origin_allowed("http://127.0.0.1:8000", ("10.0.0.5", 8000))
    listed = Gatekeeper(["https://app.example.com/"])
    assert listed.origin_allowed("https://APP.example.com", ("10.0.0.5", 443))
    assert Gatekeeper(["*"]).origin_allowed("http://evil.example.com", LOOPBACK)


def test_hosts() -> None:
    gate = Gatekeeper()
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST", "127.1"):
        assert gate.host_allowed(host, LOOPBACK), host
    for bad in ("evil.example.com", "evil.example.com:8000", None, "[::1", "a:b:c"):
        assert not gate.host_allowed(bad, LOOPBACK), bad
    assert gate.host_allowed("anything.example.com", ("0.0.0.0", 8000))
    assert gate.host_allowed("anything", None)
    named = Gatekeeper(allowed_hosts=["mcp.example.com"])
    assert named.host_allowed("mcp.example.com:443", ("10.0.0.5", 443))
    assert not named.host_allowed("other.example.com", ("10.0.0.5", 443))
    assert named.host_allowed("mcp.example.com", LOOPBACK)
    assert split_host("[::1]:80") == ("::1", 80) and split_host("x:port") == ("", None)


def test_bearer_tokens_and_challenges() -> None:
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None and bearer_token("Bearer") is None
    assert bearer_token("Bearer a b") is None and bearer_token(None) is None
    doc = check_metadata(
        {"resource": "https://mcp.example.com/mcp", "authorization_servers": ["https://as"]}
    )
    url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert metadata_url(doc["resource"]) == url
    assert challenge(doc) == f'Bearer resource_metadata="{url}"'
    assert challenge(doc, "invalid_token") == (
        f'Bearer error="invalid_token", resource_metadata="{url}"'
    )
    assert challenge(None) == "Bearer"
    for bad in ({"resource": "mcp"}, {"resource": "https://x/mcp", "authorization_servers": []}):
        with pytest.raises(ValueError, match="resource_metadata"):
            check_metadata(bad)
