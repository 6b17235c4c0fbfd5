"""The bench echo server with the middleware ``$BENCH_MW`` names (comma-separated):
``noop`` (a pass-through function), ``log`` (`LoggingMiddleware`, text to stderr),
``json`` (JSON lines), ``metrics`` (`RequestMetrics`, what ``/metrics`` counts with),
``timing``; empty for none."""

import os
from typing import Any

from mcpline import Server
from mcpline.middleware import LoggingMiddleware, TimingMiddleware
from mcpline.observability.metrics import RequestMetrics


async def noop(mctx: Any, call_next: Any) -> Any:
    return await call_next(mctx)


MADE = {
    "noop": lambda: noop,
    "log": LoggingMiddleware,
    "json": lambda: LoggingMiddleware(json=True),
    "metrics": RequestMetrics,
    "timing": TimingMiddleware,
}
app = Server(
    "bench-middleware",
    middleware=[MADE[n]() for n in os.environ.get("BENCH_MW", "").split(",") if n],
)


@app.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.tool
async def aecho(text: str) -> str:
    """Return the text unchanged (an async tool: no worker thread)."""
    return text


if __name__ == "__main__":
    app.run()
