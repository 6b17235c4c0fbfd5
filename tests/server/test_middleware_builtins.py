"""The built-in middleware, each on a real stdio process and a real ``mcpline run --http``
server: logging (text and JSON lines, on stderr), timing, rate limits, error masking,
response-size limits and the response cache; and ``ctx.headers`` on both."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpline.middleware import RateLimitMiddleware, ResponseCacheMiddleware
from mcpline.middleware._chain import MiddlewareContext

from ..proc import FIXTURES, ServerProcess
from ..transports.http_util import MCPLINE, HttpServer, call
from .test_legacy import call as legacy_call
from .test_legacy import initialize

SERVER = FIXTURES / "middleware_server.py"
TRANSPORTS = ("stdio", "http")


class Served:
    """The fixture server on one transport, spoken to the same way on both."""

    def __init__(self, transport: str, spawn: Callable[..., ServerProcess], env: dict[str, str]):
        self.transport = transport
        self.ids = 0
        self.proc: ServerProcess | None = None
        self.http: HttpServer | None = None
        if transport == "stdio":
            self.proc = spawn(SERVER, env=env)
        else:
            self.http = HttpServer([MCPLINE, "run", str(SERVER), "--http", "127.0.0.1:0"], env)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.proc is not None:
            return self.proc.request(method, params)
        assert self.http is not None
        self.ids += 1
        found: dict[str, Any] = call(self.http, self.ids, method, params).json
        return found

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params)

    def stderr(self, waiting_for: str) -> str:
        deadline = time.monotonic() + 30
        while True:
            text = self.proc.stderr if self.proc is not None else self._http().stderr
            if waiting_for in text or time.monotonic() > deadline:
                return text
            time.sleep(0.02)

    def _http(self) -> HttpServer:
        assert self.http is not None
        return self.http

    def stop(self) -> None:
        if self.http is not None:
            assert self.http.stop() == 0
            assert self.http.stdout == b""


@pytest.fixture
def serve(
    spawn: Callable[..., ServerProcess], request: pytest.FixtureRequest
) -> Iterator[Callable[[dict[str, str]], Served]]:
    started: list[Served] = []
    transport: str = request.param

    def start(env: dict[str, str]) -> Served:
        served = Served(transport, spawn, env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


both = pytest.mark.parametrize("serve", TRANSPORTS, indirect=True)


def text(resp: dict[str, Any]) -> str:
    value: str = resp["result"]["content"][0]["text"]
    return value


@both
def test_logging_text_lines_on_stderr_without_params(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "log"})
    assert text(s.call("echo", {"text": "private-words"})) == "private-words"
    err = s.stderr("target=echo")
    line = next(ln for ln in err.splitlines() if "target=echo" in ln)
    assert line.startswith("tools/call id=")
    assert "era=modern" in line and "outcome=ok" in line and line.endswith("ms")
    assert "private-words" not in err


@both
def test_logging_json_lines_with_outcome_and_code(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "log-json"})
    assert s.call("forbidden")["error"]["code"] == -32001
    s.call("boom", {"secret": "x"})
    err = s.stderr('"target": "boom"')
    records = [json.loads(ln) for ln in err.splitlines() if ln.startswith('{"event"')]
    by_target = {r.get("target"): r for r in records}
    assert by_target["forbidden"]["outcome"] == "error"
    assert by_target["forbidden"]["code"] == -32001
    assert by_target["boom"]["outcome"] == "tool_error"
    assert by_target["boom"]["method"] == "tools/call"
    assert isinstance(by_target["boom"]["ms"], float)


@both
def test_timing_lines(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "timing"})
    s.call("echo", {"text": "t"})
    s.request("resources/read", {"uri": "data://counter"})
    err = s.stderr("timing resources/read data://counter")
    assert "timing tools/call echo " in err


@both
def test_rate_limit_refuses_past_the_burst(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "rate", "MW_RATE": "0.01", "MW_BURST": "3"})
    for _ in range(3):
        assert text(s.call("echo", {"text": "ok"})) == "ok"
    refused = s.call("echo", {"text": "no"})["error"]
    assert refused["code"] == -32011
    assert refused["message"].startswith("Too many requests")
    assert refused["data"]["retryAfterMs"] > 1000


@both
def test_error_masking_hides_exception_text(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "mask"})
    resp = s.call("boom", {"secret": "hunter2"})["result"]
    assert resp["isError"] is True
    shown = resp["content"][0]["text"]
    assert "hunter2" not in shown and "ValueError" not in shown
    ref = shown.rsplit("reference ", 1)[1].rstrip(")")
    err = s.stderr(f"reference {ref}")
    assert f"failed with ValueError (reference {ref}" in err
    assert text(s.call("oops")) == "meant for you"  # a ToolError is meant for the client


@both
def test_without_masking_the_exception_text_is_sent(serve: Callable[..., Served]) -> None:
    s = serve({})
    assert "hunter2" in text(s.call("boom", {"secret": "hunter2"}))


@both
def test_response_size_limit(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "size", "MW_MAX_BYTES": "600"})
    assert text(s.call("big", {"n": 10})) == "x" * 10
    resp = s.call("big", {"n": 5000})["result"]
    assert resp["isError"] is True
    assert "Tool result too large" in resp["content"][0]["text"]
    refused = s.request("tools/list")["error"]
    assert refused["code"] == -32012
    assert refused["data"]["size"] > 600
    s.stderr("over the limit of 600")


@both
def test_response_cache_honours_ttl(serve: Callable[..., Served]) -> None:
    s = serve({"MW": "cache"})
    reads = [s.request("resources/read", {"uri": "data://counter"}) for _ in range(3)]
    assert {r["result"]["contents"][0]["text"] for r in reads} == {"1"}
    assert reads[0]["result"]["ttlMs"] == 60_000


@both
def test_without_cache_every_read_runs(serve: Callable[..., Served]) -> None:
    s = serve({})
    reads = [s.request("resources/read", {"uri": "data://counter"}) for _ in range(2)]
    assert [r["result"]["contents"][0]["text"] for r in reads] == ["1", "2"]


@both
def test_ctx_headers(serve: Callable[..., Served]) -> None:
    s = serve({})
    found = s.call("headers")["result"]["structuredContent"]["result"]
    if s.transport == "stdio":
        assert found is None
    else:
        assert found["mcp-method"] == "tools/call"
        assert found["content-type"] == "application/json"


@pytest.mark.driver("memory")
def test_legacy_results_are_not_cached(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER, env={"MW": "cache"})
    initialize(p)
    texts = [
        legacy_call(p, "resources/read", {"uri": "data://counter"})["result"]["contents"][0]["text"]
        for _ in range(2)
    ]
    assert texts == ["1", "2"]


# --- units --------------------------------------------------------------------------------


def test_rate_limit_buckets_per_key_refill_and_stay_bounded() -> None:
    limit = RateLimitMiddleware(2.0, 2, max_keys=2)
    assert limit.take("a", 0.0) == 0 and limit.take("a", 0.0) == 0
    assert limit.take("a", 0.0) == pytest.approx(0.5)
    assert limit.take("b", 0.0) == 0  # another principal has its own bucket
    assert limit.take("a", 0.5) == 0  # refilled at 2 a second
    limit.take("c", 0.5)
    assert limit.keys == 2
    with pytest.raises(ValueError):
        RateLimitMiddleware(0)


def test_rate_limit_key_defaults_to_the_principal() -> None:
    from mcpline.middleware.limits import principal_key

    alice = MiddlewareContext("tools/call", {}, "request", principal="alice")
    nobody = MiddlewareContext("tools/call", {}, "request")
    assert principal_key(nobody) == "anonymous"
    assert principal_key(alice) not in ("anonymous", principal_key(nobody))


def test_cache_bounds() -> None:
    with pytest.raises(ValueError):
        ResponseCacheMiddleware(max_entries=0)
