"""`_meta` validation rows and capability helpers, sans-I/O."""

from __future__ import annotations

from typing import Any

import pytest

from mcpline.errors import JsonRpcError, MissingCapabilityError
from mcpline.jsonrpc import MISSING
from mcpline.protocol.capabilities import has_capability, require_capability
from mcpline.protocol.meta import has_modern_meta, validate_request_meta

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
LL = "io.modelcontextprotocol/logLevel"
SUPPORTED = ("2026-07-28",)


def good(**extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {PV: "2026-07-28", CC: {"sampling": {}}}
    m.update(extra)
    return {"_meta": m}


def without(key: str, **extra: Any) -> dict[str, Any]:
    p = good(**extra)
    del p["_meta"][key]
    return p


@pytest.mark.parametrize(
    ("params", "code"),
    [
        (MISSING, -32602),
        (None, -32602),
        ([], -32602),
        ("x", -32602),
        ({}, -32602),
        ({"_meta": None}, -32602),
        ({"_meta": []}, -32602),
        (without(PV), -32602),
        (good(**{PV: 1}), -32602),
        (good(**{PV: None}), -32602),
        (without(CC), -32602),
        (good(**{CC: None}), -32602),
        (good(**{CC: "all"}), -32602),
        (good(**{LL: "verbose"}), -32602),
        (good(**{LL: 3}), -32602),
        (good(**{LL: []}), -32602),
        (good(**{LL: {"level": "info"}}), -32602),
        (good(progressToken=1.5), -32602),
        (good(progressToken=True), -32602),
        (good(**{PV: "2025-11-25"}), -32022),
        (good(**{PV: ""}), -32022),
    ],
)
def test_rejections(params: Any, code: int) -> None:
    with pytest.raises(JsonRpcError) as info:
        validate_request_meta(params, SUPPORTED)
    assert info.value.code == code
    if code == -32022:
        assert info.value.data == {"supported": ["2026-07-28"], "requested": params["_meta"][PV]}


def test_missing_meta_names_the_versions() -> None:
    with pytest.raises(JsonRpcError) as info:
        validate_request_meta({"protocolVersion": "2025-11-25"}, SUPPORTED)
    assert "2026-07-28" in info.value.message
    assert info.value.data == {"supported": ["2026-07-28"]}


def test_missing_keys_are_checked_before_the_version() -> None:
    p = without(CC, **{PV: "1999-01-01"})
    with pytest.raises(JsonRpcError) as info:
        validate_request_meta(p, SUPPORTED)
    assert info.value.code == -32602


def test_accepted_meta() -> None:
    m = validate_request_meta(good(), SUPPORTED)
    assert m.protocol_version == "2026-07-28" and m.client_capabilities == {"sampling": {}}
    assert m.client_info is None and m.log_level is None and m.progress_token is None
    m = validate_request_meta(
        good(**{CI: {"name": "c", "version": "1"}, LL: "warning"}, progressToken="t"), SUPPORTED
    )
    assert m.client_info == {"name": "c", "version": "1"} and m.progress_token == "t"
    assert m.wants_log("error") and m.wants_log("warning") and not m.wants_log("info")
    assert validate_request_meta(good(**{CI: "junk"}), SUPPORTED).client_info is None
    assert validate_request_meta(good(progressToken=0), SUPPORTED).progress_token == 0


def test_has_modern_meta() -> None:
    assert has_modern_meta(good())
    assert not has_modern_meta({"protocolVersion": "2025-11-25"})
    assert not has_modern_meta(MISSING) and not has_modern_meta({"_meta": {}})


def test_capabilities() -> None:
    caps = {"elicitation": {"url": {}}, "sampling": {}, "roots": True}
    assert has_capability(caps, "elicitation") and has_capability(caps, "elicitation.url")
    assert not has_capability(caps, "elicitation.form")
    assert not has_capability(caps, "roots")  # values must be objects
    assert not has_capability({}, "sampling")
    require_capability(caps, "sampling")
    with pytest.raises(MissingCapabilityError) as info:
        require_capability(caps, "sampling.tools")
    err = info.value
    assert err.code == -32021
    assert err.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}
    assert "sampling" in err.message
