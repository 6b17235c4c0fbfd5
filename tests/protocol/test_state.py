"""requestState sealing: integrity, binding to method and params, expiry, strict decoding."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from mcpline.errors import StateError
from mcpline.protocol.state import STATE_KEY_ENV, MemoryNonceLedger, StateSealer, params_digest
from mcpline.spec import INVALID_PARAMS

KEY = "k" * 32
PARAMS = {"name": "greet", "arguments": {"x": 1}, "_meta": {"a": 1}}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_round_trip_returns_state_and_asked_methods() -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, {"round": 2, "name": "Ada"}, {"k": "elicitation/create"})
    state, asked = s.open(token, "tools/call", PARAMS)
    assert state == {"round": 2, "name": "Ada"}
    assert asked == {"k": "elicitation/create"}


def test_a_state_opens_only_for_the_owner_it_was_sealed_for() -> None:
    s = StateSealer(KEY, ledger=MemoryNonceLedger())
    token = s.seal("tools/call", PARAMS, "x", owner="alice")
    for other in ("bob", ""):
        with pytest.raises(StateError, match="issued to another client") as err:
            s.open(token, "tools/call", PARAMS, other)
        assert err.value.code == INVALID_PARAMS
    assert s.open(token, "tools/call", PARAMS, "alice")[0] == "x"  # a refusal used nothing up
    anonymous = s.seal("tools/call", PARAMS, "y")
    with pytest.raises(StateError, match="issued to another client"):
        s.open(anonymous, "tools/call", PARAMS, "alice")


def test_each_seal_differs() -> None:
    s = StateSealer(KEY)
    assert s.seal("tools/call", PARAMS, 1) != s.seal("tools/call", PARAMS, 1)


def test_params_outside_the_identity_do_not_matter() -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, "x")
    retry = {**PARAMS, "_meta": {"other": True}, "inputResponses": {"k": {}}, "requestState": token}
    assert s.open(token, "tools/call", retry)[0] == "x"
    # key order does not matter either
    assert params_digest({"a": 1, "b": 2}) == params_digest({"b": 2, "a": 1})


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t + "-TAMPERED",
        lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),
        lambda t: ("A" if t[0] != "A" else "B") + t[1:],
        lambda t: t.replace(".", ".."),
        lambda t: t.upper(),
        lambda t: t + "=",
        lambda t: t.split(".")[0] + "==." + t.split(".")[1],
        lambda t: "",
        lambda t: t.split(".")[0],
    ],
)
def test_any_modification_fails(mutate: Callable[[str], str]) -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, {"ok": True})
    with pytest.raises(StateError) as err:
        s.open(mutate(token), "tools/call", PARAMS)
    assert err.value.code == INVALID_PARAMS


def test_forged_payload_with_valid_format_fails() -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, {"admin": False})
    body, mac = token.rsplit(".", 1)
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["s"] = {"admin": True}
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    with pytest.raises(StateError, match="integrity"):
        s.open(f"{forged}.{mac}", "tools/call", PARAMS)


def test_other_key_or_scope_fails() -> None:
    token = StateSealer(KEY, scope="a").seal("tools/call", PARAMS, 1)
    with pytest.raises(StateError, match="integrity"):
        StateSealer(KEY, scope="b").open(token, "tools/call", PARAMS)
    with pytest.raises(StateError, match="integrity"):
        StateSealer("z" * 32, scope="a").open(token, "tools/call", PARAMS)
    assert StateSealer(KEY, scope="a").open(token, "tools/call", PARAMS)[0] == 1


def test_bound_to_method_and_params() -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, 1)
    with pytest.raises(StateError, match="prompts/get"):
        s.open(token, "prompts/get", PARAMS)
    with pytest.raises(StateError, match="other parameters"):
        s.open(token, "tools/call", {**PARAMS, "arguments": {"x": 2}})
    with pytest.raises(StateError, match="other parameters"):
        s.open(token, "tools/call", {**PARAMS, "name": "other"})


def test_expiry() -> None:
    clock = Clock()
    s = StateSealer(KEY, ttl=60, clock=clock)
    token = s.seal("tools/call", PARAMS, 1)
    clock.now += 59
    assert s.open(token, "tools/call", PARAMS)[0] == 1
    clock.now += 2
    with pytest.raises(StateError, match="expired"):
        s.open(token, "tools/call", PARAMS)


def test_not_a_string() -> None:
    s = StateSealer(KEY)
    for bad in (None, 1, {"a": 1}, ["x"]):
        with pytest.raises(StateError, match="string"):
            s.open(bad, "tools/call", PARAMS)


def test_random_key_without_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATE_KEY_ENV, raising=False)
    a, b = StateSealer(), StateSealer()
    assert not a.stable
    token = a.seal("tools/call", PARAMS, 1)
    with pytest.raises(StateError):
        b.open(token, "tools/call", PARAMS)


def test_key_from_environment_is_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_KEY_ENV, "shared-secret-of-enough-length")
    a, b = StateSealer(scope="srv"), StateSealer(scope="srv")
    assert a.stable
    assert b.open(a.seal("tools/call", PARAMS, "s"), "tools/call", PARAMS)[0] == "s"


def test_short_key_and_bad_state_are_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        StateSealer("short")
    with pytest.raises(ValueError, match="JSON"):
        StateSealer(KEY).seal("tools/call", PARAMS, object())
    with pytest.raises(ValueError, match="limit"):
        StateSealer(KEY).seal("tools/call", PARAMS, "x" * 100_000)


# --- single use -------------------------------------------------------------------------------


def test_with_a_ledger_a_state_opens_once() -> None:
    s = StateSealer(KEY, ledger=MemoryNonceLedger())
    token = s.seal("tools/call", PARAMS, "x")
    assert s.open(token, "tools/call", PARAMS)[0] == "x"
    with pytest.raises(StateError, match="already used") as info:
        s.open(token, "tools/call", PARAMS)
    assert info.value.code == INVALID_PARAMS


def test_without_a_ledger_a_state_reopens_until_expiry() -> None:
    s = StateSealer(KEY)
    token = s.seal("tools/call", PARAMS, "x")
    assert s.open(token, "tools/call", PARAMS) == s.open(token, "tools/call", PARAMS)


def test_a_refused_state_is_not_consumed() -> None:
    s = StateSealer(KEY, ledger=MemoryNonceLedger())
    token = s.seal("tools/call", PARAMS, "x")
    with pytest.raises(StateError):
        s.open(token + "0", "tools/call", PARAMS)
    with pytest.raises(StateError):
        s.open(token, "tools/call", {**PARAMS, "name": "other"})
    assert s.open(token, "tools/call", PARAMS)[0] == "x"


def test_ledger_forgets_nonces_once_expired_and_fails_closed_when_full() -> None:
    clock = Clock()
    ledger = MemoryNonceLedger(max_entries=2, clock=clock)
    assert ledger.claim("a", int(clock.now) + 10)
    assert ledger.claim("b", int(clock.now) + 20)
    assert not ledger.claim("a", int(clock.now) + 10)
    assert not ledger.claim("c", int(clock.now) + 10)  # full of live nonces: refuse
    clock.now += 10
    assert len(ledger) == 2
    assert ledger.claim("c", int(clock.now) + 10)  # "a" expired and was dropped
    assert len(ledger) == 2
    with pytest.raises(ValueError):
        MemoryNonceLedger(max_entries=0)


def test_server_single_use_option() -> None:
    from mcpline import Server

    assert isinstance(Server("a")._dispatch.sealer.ledger, MemoryNonceLedger)
    assert Server("b", state_single_use=False)._dispatch.sealer.ledger is None
    shared = MemoryNonceLedger()
    assert Server("c", state_single_use=shared)._dispatch.sealer.ledger is shared
