"""The bridge's cost: a request through ``mcpline bridge`` beside the same request made
directly, and the throughput of ``--http`` with ``--pool 1, 2, 4``.

    .venv/bin/python bench/bridge.py            # 3 interleaved rounds
    .venv/bin/python bench/bridge.py --quick

One server file (``servers/bridge_server.py``: ``aecho``, and ``burn`` which keeps a CPU busy
for a while), one client (`mcpline.Client`), five ways to reach it:

* stdio, direct: ``Client.stdio(python server.py)``;
* HTTP, direct: ``mcpline run server.py --http`` and ``Client.http``;
* stdio → HTTP bridge: ``mcpline bridge --http … --pool N -- python server.py`` and
  ``Client.http`` (its overhead is the difference with *HTTP, direct*: one more hop, stdio);
* HTTP → stdio bridge: ``Client.stdio(mcpline bridge --stdio --server URL)`` in front of the
  direct HTTP server (its overhead is the difference with *HTTP, direct*: one more hop, HTTP).

Figures: microseconds per ``aecho`` with one call in flight (latency) and calls/s with 64 in
flight; for the pool, calls/s of ``burn(2 ms)`` with 16 in flight, where the server processes
are the bottleneck (each is one core at most) and the pool is what spreads the work. The
machine has as many cores as it has: past them more processes cannot help. Written to
bench/results/bridge.md. Nothing here is a test: tests never assert speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import re
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import common
import psutil  # type: ignore[import-untyped,unused-ignore]
from common import machine

HERE = Path(__file__).resolve().parent
SERVER = HERE / "servers" / "bridge_server.py"
MCPLINE = [sys.executable, "-c", "import sys; from mcpline.cli import main; sys.exit(main())"]
LISTENING = re.compile(r"listening on (http://\S+)")
POOLS = (1, 2, 4)


@contextlib.contextmanager
def process(argv: list[str], ready: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start ``argv``; wait for a stderr line matching ``ready`` (and its URL, if any)."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    url = ""
    try:
        deadline = time.monotonic() + 60
        for line in proc.stderr:
            if m := LISTENING.search(line):
                url = m[1]
            if re.search(ready, line):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv[:6]} did not get ready")
        else:
            raise RuntimeError(f"{argv[:6]} exited: {proc.wait()}")
        yield proc, url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def measure(call: Callable[[], Awaitable[Any]], seconds: float, window: int) -> float:
    """Calls per second with ``window`` calls in flight for ``seconds``."""
    return (await common.measure(call, seconds, window))["per_s"]


@contextlib.asynccontextmanager
async def client_for(way: str, url: str) -> AsyncIterator[Any]:
    from mcpline import Client

    if way == "stdio":
        async with Client.stdio(sys.executable, [str(SERVER)], timeout=120) as c:
            yield c
    elif way == "http-to-stdio":
        argv = [*MCPLINE, "bridge", "--stdio", "--server", url]
        async with Client.stdio(argv[0], argv[1:], timeout=120, probe_timeout=30) as c:
            yield c
    else:
        async with Client.http(url, timeout=120) as c:
            yield c


def cpu(pids: list[int]) -> float:
    """CPU seconds used so far by ``pids`` (each process alone, not its children)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


def tree(pid: int) -> list[int]:
    with contextlib.suppress(psutil.NoSuchProcess):
        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    return [pid]


async def figures(
    way: str, url: str, seconds: float, bridge: int | None = None, server: int | None = None
) -> dict[str, float]:
    """Latency of one ``aecho``, calls/s at 64 in flight and, during those, the CPU per call
    of the bridge process and of the server's processes, through ``way``."""
    async with client_for(way, url) as c:

        async def echo() -> None:
            r = await c.call_tool("aecho", {"text": "hello"})
            if r["content"][0]["text"] != "hello":
                raise RuntimeError(f"unexpected result {r!r}")

        for _ in range(100):
            await echo()
        if way == "stdio":
            server = c.pid
        elif way == "http-to-stdio":
            bridge = c.pid
        rate1 = await measure(echo, seconds, 1)
        mine = [bridge] if bridge is not None else []
        theirs = ([server] if server is not None else []) or (
            [p for p in tree(bridge)[1:]] if bridge is not None else []
        )
        if way == "http-to-stdio" and server is not None:
            theirs = [server]
        b0, s0, t0 = cpu(mine), cpu(theirs), time.perf_counter()
        rate64 = await measure(echo, seconds, 64)
        calls = rate64 * (time.perf_counter() - t0)
        b1, s1 = cpu(mine), cpu(theirs)
    out = {"latency_us": 1e6 / rate1, "per_s_64": rate64, "server_cpu_us": (s1 - s0) / calls * 1e6}
    if mine:
        out["bridge_cpu_us"] = (b1 - b0) / calls * 1e6
    return out


async def burn_rate(url: str, seconds: float) -> float:
    from mcpline import Client

    async with Client.http(url, timeout=120) as c:

        async def burn() -> None:
            await c.call_tool("burn", {"ms": 2})

        for _ in range(20):
            await burn()
        return await measure(burn, seconds, 16)


def one_round(seconds: float) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    http = [*MCPLINE, "run", str(SERVER), "--http", "127.0.0.1:0"]
    with process(http, "listening on") as (direct, direct_url):
        out["stdio, direct"] = asyncio.run(figures("stdio", "", seconds))
        out["HTTP, direct"] = asyncio.run(figures("http", direct_url, seconds, server=direct.pid))
        out["HTTP → stdio bridge"] = asyncio.run(
            figures("http-to-stdio", direct_url, seconds, server=direct.pid)
        )
        out["HTTP, direct"]["burn_per_s"] = asyncio.run(burn_rate(direct_url, seconds))
    for pool in POOLS:
        argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", "--pool", str(pool), "--quiet"]
        argv += ["--", sys.executable, str(SERVER)]
        with process(argv, "mcpline bridge: serving") as (proc, url):
            name = f"stdio → HTTP bridge, --pool {pool}"
            out[name] = asyncio.run(figures("http", url, seconds, bridge=proc.pid))
            out[name]["burn_per_s"] = asyncio.run(burn_rate(url, seconds))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = common.round_parser(__doc__, 2.0, HERE / "results" / "bridge.md")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 1, 0.5
    started = dt.datetime.now(dt.timezone.utc)
    rounds: list[dict[str, dict[str, float]]] = []
    for i in range(args.rounds):
        got = one_round(args.seconds)
        rounds.append(got)
        for way, figs in got.items():
            shown = ", ".join(f"{k} {v:,.0f}" for k, v in figs.items())
            print(f"  round {i + 1}/{args.rounds} {way}: {shown}", flush=True)

    def med(way: str, key: str) -> float | None:
        vals = [r[way][key] for r in rounds if key in r[way]]
        return statistics.median(vals) if vals else None

    ways = list(rounds[0])
    direct = med("HTTP, direct", "latency_us") or 0.0

    def us(value: float | None, sign: bool = False) -> str:
        if value is None:
            return "—"
        return f"{value:+,.0f} µs" if sign else f"{value:,.0f} µs"

    rows = [
        "| way | wall time per call, 1 in flight | … over HTTP, direct | calls/s, 64 in flight "
        "| bridge CPU per call | server CPU per call | `burn(2 ms)` calls/s, 16 in flight |",
        "|---|---|---|---|---|---|---|",
    ]
    for way in ways:
        lat, rate = med(way, "latency_us"), med(way, "per_s_64")
        assert lat is not None and rate is not None
        direct_way = way.startswith(("stdio, direct", "HTTP, direct"))
        burn = med(way, "burn_per_s")
        rows.append(
            f"| {way} | {us(lat)} | {'—' if direct_way else us(lat - direct, True)} "
            f"| {rate:,.0f} | {us(med(way, 'bridge_cpu_us'))} | {us(med(way, 'server_cpu_us'))} "
            f"| {'—' if burn is None else f'{burn:,.0f}'} |"
        )
    report = "\n\n".join(
        [
            "# Bridge benchmark: `mcpline bridge` beside direct stdio and direct HTTP",
            f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; {args.rounds} interleaved rounds "
            f"of {args.seconds:g} s per figure, medians; one client (`mcpline.Client`), server "
            "`bench/servers/bridge_server.py`; `python bench/bridge.py`.",
            "\n".join(rows),
            "*Wall time* is one call at a time, end to end, and *… over HTTP, direct* its "
            "difference with the same call made directly over HTTP: on a shared, loaded VM it "
            "swings by milliseconds between rounds, so the CPU columns (measured during the "
            "64-in-flight run, from /proc through psutil) are the steadier account of the "
            "bridge's cost. *bridge CPU*: the bridge process per call (for `--stdio`, the "
            "bridge only; the HTTP server is the *server* column); *server CPU*: the "
            "processes that serve the call behind it (the pool's processes, the HTTP server). "
            "`burn` keeps a core busy for 2 ms per call: one server process serves one core's "
            "worth, the pool spreads calls over its processes, up to the machine's cores "
            "(the bridge and the client need some too).",
        ]
    )
    common.write_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
