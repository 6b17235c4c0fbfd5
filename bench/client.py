"""Client side: `mcpline.Client` vs the official SDK's `mcp.Client`, calling the same server.

    .venv/bin/python bench/client.py            # 3 interleaved rounds (about 2 minutes)
    .venv/bin/python bench/client.py --quick

Each client runs in a process of its own (so its CPU is its own) and launches the server
over stdio through its own public API. Figures: start (client created → first tool result,
server launch included), sequential calls/s, calls/s with 100 in flight, and client CPU
per call (process CPU, all threads). Two servers: the bare floor (so that the client is the
bottleneck) and the mcpline bench server. Written to bench/results/client.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLIENTS = ("mcpline", "mcp 2.3.0")
SERVERS = {"floor": "bare_server", "mcpline server": "mcpline_server"}


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


async def worker(kind: str, server: str, seconds: float) -> dict[str, Any]:
    """Run inside the measuring subprocess: one client kind against one server."""
    path = str(HERE / "servers" / f"{SERVERS[server]}.py")
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    if kind == "mcpline":
        from mcpline import Client

        async with Client.stdio(sys.executable, [path]) as client:

            async def call() -> None:
                _check(await client.call_tool("echo", {"text": "hello"}))

            await call()
            out["start"] = time.perf_counter() - t0
            out["era"] = client.description.era if client.description else "?"
            for _ in range(50):
                await call()
            out["seq"] = await _measure(call, seconds, 1)
            out["pipe"] = await _measure(call, seconds, 100)
    else:
        from mcp import Client as SdkClient
        from mcp import StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=[path], env=dict(os.environ))
        async with SdkClient(params) as sdk:

            async def call() -> None:
                _check(await sdk.call_tool("echo", {"text": "hello"}))

            await call()
            out["start"] = time.perf_counter() - t0
            out["era"] = "sdk default (auto)"
            for _ in range(50):
                await call()
            out["seq"] = await _measure(call, seconds, 1)
            out["pipe"] = await _measure(call, seconds, 100)
    return out


def run_worker(kind: str, server: str, seconds: float) -> dict[str, Any]:
    env = {**os.environ, "MCPLINE_UVLOOP": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", kind, "--server", server, "--seconds", str(seconds)],
        capture_output=True,
        env=env,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} client vs {server} failed:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", choices=CLIENTS)
    ap.add_argument("--server", choices=tuple(SERVERS), default="floor")
    ap.add_argument("--out", default=str(HERE / "results" / "client.md"))
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, args.server, args.seconds))))
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 0.5

    sys.path.insert(0, str(HERE))
    from run import machine

    started = dt.datetime.now(dt.timezone.utc)
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rnd in range(args.rounds):
        for server in SERVERS:
            kinds = CLIENTS if rnd % 2 == 0 else CLIENTS[::-1]
            for kind in kinds:
                res = run_worker(kind, server, args.seconds)
                samples.setdefault((kind, server), []).append(res)
                print(
                    f"  round {rnd + 1}/{args.rounds} {kind:>10} client → {server}: "
                    f"seq {res['seq']['per_s']:,.0f}/s, "
                    f"100 in flight {res['pipe']['per_s']:,.0f}/s, "
                    f"CPU {res['pipe']['cpu_per_call'] * 1e6:,.0f} µs/call",
                    flush=True,
                )

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
    figures = [
        ("start → first tool result", ("start",), "s", False),
        ("sequential calls/s", ("seq", "per_s"), "/s", True),
        ("calls/s, 100 in flight", ("pipe", "per_s"), "/s", True),
        ("client CPU per sequential call", ("seq", "cpu_per_call"), "µs", False),
        ("client CPU per call, 100 in flight", ("pipe", "cpu_per_call"), "µs", False),
    ]
    for server in SERVERS:
        for label, path, unit, _higher in figures:
            a, b = med("mcpline", server, *path), med("mcp 2.3.0", server, *path)

            def fmt(v: float, unit: str = unit) -> str:
                if unit == "s":
                    return f"{v:.3f} s"
                if unit == "/s":
                    return f"{v:,.0f}/s"
                return f"{v * 1e6:,.0f} µs"

            rows.append(f"| {server} | {label} | {fmt(a)} | {fmt(b)} | {a / b:.2f}× |")
    eras = {f"{k} → {s}": v[0]["era"] for (k, s), v in samples.items()}

    def ratio(server: str, fig: str) -> float:
        return med("mcpline", server, fig, "per_s") / med("mcp 2.3.0", server, fig, "per_s")

    pipe_ratio = {s: ratio(s, "pipe") for s in SERVERS}
    seq_ratio = {s: ratio(s, "seq") for s in SERVERS}
    target = [
        f"- [{'met' if min(seq_ratio[s], pipe_ratio[s]) >= 5 else 'MISSED'}] calls/s through our "
        f"client ≥ 5× through the official client, on the {s}: sequential {seq_ratio[s]:.1f}×, "
        f"100 in flight {pipe_ratio[s]:.1f}×"
        for s in SERVERS
    ]
    report = "\n\n".join(
        [
            "# Client benchmark: mcpline.Client vs mcp.Client (2.3.0)",
            f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; {args.rounds} interleaved rounds, "
            f"medians; `python bench/client.py`. Eras: "
            + "; ".join(f"{k}: {v}" for k, v in eras.items()),
            "\n".join(rows),
            "## Target",
            "\n".join(target),
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
