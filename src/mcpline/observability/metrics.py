"""Request metrics in the Prometheus text format (version 0.0.4), kept by a middleware.

`RequestMetrics` is a `mcpline.middleware.Middleware`: requests by method and outcome,
errors by code, a latency histogram per method, requests in flight, notifications and
tasks created. `render` writes them, with any gauges the caller adds (the HTTP app adds
its listens, sessions and limits, see `mcpline.transports.http.probes`). Method labels
are bounded: a request refused before a handler was chosen counts as ``other``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from ..middleware._chain import CallNext, Middleware, MiddlewareContext
from ..middleware.logs import outcome

BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
"""Upper bounds (seconds) of the latency histogram's buckets (``+Inf`` follows)."""

Sample = tuple[str, dict[str, str], float]
"""A metric's name, labels and value."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class Family:
    """One metric family: its type, help text and samples."""

    def __init__(self, name: str, kind: str, help: str, samples: Iterable[Sample]) -> None:
        self.name = name
        self.kind = kind
        self.help = help
        self.samples = list(samples)

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]
        out += [f"{name}{_labels(labels)} {_number(value)}" for name, labels, value in self.samples]
        return out


def render(families: Iterable[Family]) -> bytes:
    """The exposition text of ``families``."""
    lines: list[str] = []
    for family in families:
        lines += family.lines()
    return ("\n".join(lines) + "\n").encode()


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.sum += seconds


class RequestMetrics(Middleware):
    """Counts what goes through the middleware chain of one server (see the module)."""

    every_round = True

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}
        self.errors: dict[tuple[str, int], int] = {}
        self.latency: dict[str, _Histogram] = {}
        self.in_flight = 0
        self.notifications = 0
        self.tasks_created = 0

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        if mctx.task is not None:  # a task's run: its tools/call was counted
            return await call_next(mctx)
        self.in_flight += 1
        result: Any = None
        failure: BaseException | None = None
        try:
            result = await call_next(mctx)
            return result
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.in_flight -= 1
            self._count(mctx, result, failure)

    async def on_notification(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        self.notifications += 1
        return await call_next(mctx)

    def _count(self, mctx: MiddlewareContext, result: Any, exc: BaseException | None) -> None:
        method = mctx.method if mctx.context is not None else "other"
        how, code = outcome(mctx, result, exc)
        key = (method, how)
        self.requests[key] = self.requests.get(key, 0) + 1
        if code is not None:
            self.errors[(method, code)] = self.errors.get((method, code), 0) + 1
        if how == "task":
            self.tasks_created += 1
        hist = self.latency.get(method)
        if hist is None:
            hist = self.latency[method] = _Histogram()
        hist.observe(mctx.elapsed_ms() / 1000)

    def families(self) -> list[Family]:
        """This middleware's metric families."""
        latency: list[Sample] = []
        for method, hist in sorted(self.latency.items()):
            running = 0
            for bound, count in zip((*BUCKETS, float("inf")), hist.counts, strict=True):
                running += count
                le = "+Inf" if bound == float("inf") else _number(bound)
                latency.append(
                    (
                        "mcpline_request_duration_seconds_bucket",
                        {"method": method, "le": le},
                        running,
                    )
                )
            latency.append(("mcpline_request_duration_seconds_count", {"method": method}, running))
            latency.append(("mcpline_request_duration_seconds_sum", {"method": method}, hist.sum))
        return [
            Family(
                "mcpline_requests_total",
                "counter",
                "MCP requests answered, by method and outcome "
                "(ok, tool_error, input_required, task, error, cancelled).",
                (
                    ("mcpline_requests_total", {"method": m, "outcome": o}, n)
                    for (m, o), n in sorted(self.requests.items())
                ),
            ),
            Family(
                "mcpline_request_errors_total",
                "counter",
                "MCP requests answered with a JSON-RPC error, by method and code.",
                (
                    ("mcpline_request_errors_total", {"method": m, "code": str(c)}, n)
                    for (m, c), n in sorted(self.errors.items())
                ),
            ),
            Family(
                "mcpline_request_duration_seconds",
                "histogram",
                "Time from a request's start to its answer, by method.",
                latency,
            ),
            Family(
                "mcpline_requests_in_flight",
                "gauge",
                "MCP requests being served now.",
                [("mcpline_requests_in_flight", {}, self.in_flight)],
            ),
            Family(
                "mcpline_notifications_total",
                "counter",
                "Notifications received from clients.",
                [("mcpline_notifications_total", {}, self.notifications)],
            ),
            Family(
                "mcpline_tasks_created_total",
                "counter",
                "Requests answered with a task (tasks extension).",
                [("mcpline_tasks_created_total", {}, self.tasks_created)],
            ),
        ]


__all__ = ["BUCKETS", "Family", "RequestMetrics", "render"]
