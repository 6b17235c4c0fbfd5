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

import asyncio
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import common
from common import (
    CLIENTS,
    Samples,
    client_table,
    echo_figures,
    eras,
    machine,
    median_at,
    write_report,
)

HERE = Path(__file__).resolve().parent
SERVERS = {"floor": "bare_server", "mcpline server": "mcpline_server"}
FIGURES = [
    ("start → first tool result", ("start",), "s"),
    ("sequential calls/s", ("seq", "per_s"), "/s"),
    ("calls/s, 100 in flight", ("pipe", "per_s"), "/s"),
    ("client CPU per sequential call", ("seq", "cpu_per_call"), "µs"),
    ("client CPU per call, 100 in flight", ("pipe", "cpu_per_call"), "µs"),
]


async def worker(kind: str, server: str, seconds: float) -> dict[str, Any]:
    """Run inside the measuring subprocess: one client kind against one server."""
    path = str(HERE / "servers" / f"{SERVERS[server]}.py")
    started = time.perf_counter()
    if kind == "mcpline":
        from mcpline import Client

        async with Client.stdio(sys.executable, [path]) as client:
            out = await echo_figures(client, "echo", seconds, started)
            out["era"] = client.description.era if client.description else "?"
    else:
        from mcp import Client as SdkClient
        from mcp import StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=[path], env=dict(os.environ))
        async with SdkClient(params) as sdk:
            out = await echo_figures(sdk, "echo", seconds, started)
            out["era"] = "sdk default (auto)"
    return out


def run_worker(kind: str, server: str, seconds: float) -> dict[str, Any]:
    env = {**os.environ, "MCPLINE_UVLOOP": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [__file__, "--worker", kind, "--server", server, "--seconds", str(seconds)]
    return common.run_worker(argv, f"{kind} client vs {server}", env)


def main(argv: list[str] | None = None) -> int:
    ap = common.round_parser(__doc__, 1.5, HERE / "results" / "client.md")
    ap.add_argument("--worker", choices=CLIENTS)
    ap.add_argument("--server", choices=tuple(SERVERS), default="floor")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, args.server, args.seconds))))
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 0.5

    started = dt.datetime.now(dt.timezone.utc)
    samples: Samples = {}
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

    def ratio(server: str, fig: str) -> float:
        ours, theirs = (median_at(samples, kind, server, (fig, "per_s")) for kind in CLIENTS)
        return ours / theirs

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
            f"medians; `python bench/client.py`. Eras: {eras(samples)}",
            client_table(samples, SERVERS, FIGURES),
            "## Target",
            "\n".join(target),
        ]
    )
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
