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

import asyncio
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import common
from common import CLIENTS, Samples, client_table, echo_figures, eras, machine, write_report

HERE = Path(__file__).resolve().parent
SERVERS = {"mcp 2.3.0 server": "mcp_http_server", "floor": "http_floor_server"}
FIGURES = [
    ("calls/s, 1 in flight", ("seq", "per_s"), "/s"),
    ("calls/s, 100 in flight", ("pipe", "per_s"), "/s"),
    ("client CPU per call, 1 in flight", ("seq", "cpu_per_call"), "µs"),
    ("client CPU per call, 100 in flight", ("pipe", "cpu_per_call"), "µs"),
]


async def worker(kind: str, url: str, seconds: float) -> dict[str, Any]:
    """Run inside the measuring subprocess: one client kind against the server at ``url``."""
    if kind == "mcpline":
        from mcpline import Client

        async with Client.http(url) as client:
            out = await echo_figures(client, "aecho", seconds)
            out["era"] = client.description.era if client.description else "?"
    else:
        from mcp import Client as SdkClient

        async with SdkClient(url) as sdk:
            out = await echo_figures(sdk, "aecho", seconds)
            out["era"] = "sdk default (auto)"
    return out


def run_worker(kind: str, url: str, seconds: float) -> dict[str, Any]:
    argv = [__file__, "--worker", kind, "--url", url, "--seconds", str(seconds)]
    return common.run_worker(argv, f"{kind} client")


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
    ap = common.round_parser(__doc__, 2.0, HERE / "results" / "http_client.md")
    ap.add_argument("--worker", choices=CLIENTS)
    ap.add_argument("--url")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, args.url, args.seconds))))
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 0.5

    started = dt.datetime.now(dt.timezone.utc)
    samples: Samples = {}
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

    report = "\n\n".join(
        [
            "# HTTP client benchmark: mcpline.Client.http vs mcp.Client (2.3.0)",
            f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; {args.rounds} interleaved rounds "
            f"of {args.seconds:g} s per figure, medians; servers: the `mcp` SDK's Streamable HTTP "
            "server (uvicorn, one process, tool `aecho`) and the HTTP floor; "
            "`python bench/http_client.py`. "
            f"Eras: {eras(samples)}",
            client_table(samples, SERVERS, FIGURES),
        ]
    )
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
