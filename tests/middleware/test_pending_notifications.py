"""``Server(max_pending_notifications=N)``: at most N client notifications wait on the
middleware chain at once; past it one is handled without the chain, with a warning on
stderr (a real stdio process whose middleware holds notifications); the option is checked."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Server
from mcpline.middleware import Chain, MiddlewareContext
from mcpline.middleware._chain import CallNext

from ..proc import FIXTURES, ServerProcess

SERVER = FIXTURES / "notes_server.py"
NOTE = "notifications/roots/list_changed"


def result(resp: dict[str, Any]) -> Any:
    return resp["result"]["structuredContent"]["result"]


def test_notifications_past_the_bound_skip_the_chain_with_a_warning(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER, env={"MAX_PENDING": "2"})
    for _ in range(5):
        p.send({"jsonrpc": "2.0", "method": NOTE})
    deadline = time.monotonic() + 30
    while result(p.call("held")) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert result(p.call("held")) == 2
    warning = f"2 notifications wait on the middleware chain: {NOTE} handled without it"
    assert warning + " (1 so far)" in p.stderr
    assert result(p.call("release")) == 2  # the two held went on through the whole chain
    assert result(p.call("held")) == 2


def test_the_default_bound_holds_them_all(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    for _ in range(5):
        p.send({"jsonrpc": "2.0", "method": NOTE})
    deadline = time.monotonic() + 30
    while result(p.call("held")) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert result(p.call("release")) == 5
    assert "handled without it" not in p.stderr


async def _pass(mctx: MiddlewareContext, call_next: CallNext) -> Any:
    return await call_next(mctx)


def test_the_option_reaches_the_chain_and_is_checked() -> None:
    server = Server("bounded", middleware=[_pass], max_pending_notifications=7)
    chain = server.runtime.engine.middleware
    assert isinstance(chain, Chain) and chain.max_pending_notifications == 7
    assert Server("default").options.max_pending_notifications == 1024
    with pytest.raises(ValueError, match="max_pending_notifications must be positive"):
        Server("bad", max_pending_notifications=0)
    with pytest.raises(TypeError):
        Server("typo", max_pending_notification=3)  # type: ignore[call-arg]
