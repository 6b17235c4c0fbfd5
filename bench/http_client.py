"""HTTP client side: `mcpline.Client.http` vs the official SDK's `mcp.Client` (a URL), calling
the same Streamable HTTP server: the SDK's own (`servers/mcp_http_server.py`) and the HTTP
floor (`servers/http_floor_server.py`, so that the client is the bottleneck).

    .venv/bin/python bench/http_client.py            # 3 interleaved rounds
    .venv/bin/python bench/http_client.py --quick

Each server runs in its own process for the whole benchmark; each client runs in a process of
its own (so its CPU is its own) and talks to it through its own public API, in the era its
defaults pick. Figures: calls/s and client CPU per call (process CPU, all threads) with 1 and
with 100 calls in flight. Against the SDK's server the server is the bottleneck, so there the
CPU per call says more about the client than the rate does. Written to bench/results/http_client.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLIENTS = ("mcpline", "mcp 2.3.0")
SERVERS = {"mcp 2.3.0 server": "mcp_http_server", "floor": "http_floor_server"}


async def _measure(
    call: Callable[[], Awaitable[Any]], seconds: float, window: int
) -> dict[str, float]:
    """Calls/s and client CPU per call, ``window`` calls in flight for ``seconds``."""
    stop = time.perf_counter() + seconds
    done = 0

    async def lane() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await call()
            done += 1

    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(window)))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"per_s": done / elapsed, "cpu_per_call": cpu / done, "calls": done}


def _check(result: Any) -> None:
    if isinstance(result, dict):
        ok = not result.get("isError") and result["content"][0]["text"] == "hello"
    else:  # the SDK's CallToolResult model
        ok = not result.is_error and result.content[0].text == "hello"
    if not ok:
        raise RuntimeError(f"unexpected tool result: {result!r}")


async def worker(kind: str, url: str, seconds: float) -> dict[str, Any]:
    """Run inside the measuring subprocess: one client kind against the server at ``url``."""
    out: dict[str, Any] = {}
    if kind == "mcpline":
        from mcpline import Client

        async with Client.http(url) as client:

            async def call() -> None:
                _check(await client.call_tool("aecho", {"text": "hello"}))

            await call()
            out["era"] = client.description.era if client.description else "?"
            for _ in range(50):
                await call()
            out["seq"] = await _measure(call, seconds, 1)
            out["pipe"] = await _measure(call, seconds, 100)
    else:
        from mcp import Client as SdkClient

        async with SdkClient(url) as sdk:

            async def call() -> None:
                _check(await sdk.call_tool("aecho", {"text": "hello"}))

            await call()
            out["era"] = "sdk default (auto)"
            for _ in range(50):
                await call()
            out["seq"] = await _measure(call, seconds, 1)
            out["pipe"] = await _measure(call, seconds, 100)
    return out


def run_worker(kind: str, url: str, seconds: float) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", kind, "--url", url, "--seconds", str(seconds)],
        capture_output=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} client failed:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def start_server(script: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "servers" / f"{script}.py")],
        cwd=HERE / "servers",
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE / "servers")},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on (\S+)", line)
    if m is None:
        proc.kill()
        raise RuntimeError(f"the server printed no URL: {line!r}")
    return proc, m[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", choices=CLIENTS)
    ap.add_argument("--url")
    ap.add_argument("--out", default=str(HERE / "results" / "http_client.md"))
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, args.url, args.seconds))))
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 0.5

    sys.path.insert(0, str(HERE))
    from run import machine

    started = dt.datetime.now(dt.timezone.utc)
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name, script in SERVERS.items():
        proc, url = start_server(script)
        try:
            for rnd in range(args.rounds):
                for kind in CLIENTS if rnd % 2 == 0 else CLIENTS[::-1]:
                    res = run_worker(kind, url, args.seconds)
                    samples.setdefault((kind, name), []).append(res)
                    print(
                        f"  round {rnd + 1}/{args.rounds} {kind:>10} → {name}: "
                        f"1 in flight {res['seq']['per_s']:,.0f}/s "
                        f"({res['seq']['cpu_per_call'] * 1e6:,.0f} µs CPU/call), "
                        f"100 in flight {res['pipe']['per_s']:,.0f}/s "
                        f"({res['pipe']['cpu_per_call'] * 1e6:,.0f} µs CPU/call)",
                        flush=True,
                    )
        finally:
            proc.terminate()
            proc.wait(10)

    def med(kind: str, server: str, *path: str) -> float:
        vals: list[float] = []
        for s in samples[(kind, server)]:
            v: Any = s
            for p in path:
                v = v[p]
            vals.append(v)
        return statistics.median(vals)

    rows = [
        "| server | figure (median) | mcpline client | mcp 2.3.0 client | mcpline ÷ mcp |",
        "|---|---|---|---|---|",
    ]
    for server in SERVERS:
        for label, path, unit in (
            ("calls/s, 1 in flight", ("seq", "per_s"), "/s"),
            ("calls/s, 100 in flight", ("pipe", "per_s"), "/s"),
            ("client CPU per call, 1 in flight", ("seq", "cpu_per_call"), "µs"),
            ("client CPU per call, 100 in flight", ("pipe", "cpu_per_call"), "µs"),
        ):
            a, b = med("mcpline", server, *path), med("mcp 2.3.0", server, *path)

            def fmt(v: float, unit: str = unit) -> str:
                return f"{v:,.0f}/s" if unit == "/s" else f"{v * 1e6:,.0f} µs"

            rows.append(f"| {server} | {label} | {fmt(a)} | {fmt(b)} | {a / b:.2f}× |")
    eras = {f"{k} → {s}": v[0]["era"] for (k, s), v in samples.items()}
    report = "\n\n".join(
        [
            "# HTTP client benchmark: mcpline.Client.http vs mcp.Client (2.3.0)",
            f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; {args.rounds} interleaved rounds "
            f"of {args.seconds:g} s per figure, medians; servers: the `mcp` SDK's Streamable HTTP "
            "server (uvicorn, one process, tool `aecho`) and the HTTP floor; "
            "`python bench/http_client.py`. "
            "Eras: " + "; ".join(f"{k}: {v}" for k, v in eras.items()),
            "\n".join(rows),
        ]
    )
    print()
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report + "\n")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
