"""Client side: `mcpline.Client` vs the official SDK's `mcp.Client` vs a raw pipe, calling the
same server.

    .venv/bin/python bench/client.py            # 3 interleaved rounds (about 2 minutes)
    .venv/bin/python bench/client.py --quick

Each client runs in a process of its own (so its CPU is its own) and launches the server
over stdio through its own public API. Figures: start (client created → first tool result,
server launch included), sequential calls/s, calls/s with 100 in flight, and client CPU
per call (process CPU, all threads). Two servers: the bare floor (so that the client is the
bottleneck) and the mcpline bench server. The client floor is the raw pipe: no library, it
writes each request line to the server's stdin and reads the reply line (decoded, id and text
checked); the mcpline client is also shown as a ratio to it. Written to
bench/results/client.md, every sample to client.json (``--clients`` picks a subset).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common
import msgspec
from common import (
    CLIENTS,
    Samples,
    echo_figures,
    eras,
    machine,
    median_at,
    write_report,
)

HERE = Path(__file__).resolve().parent
SERVERS = {"floor": "bare_server", "mcpline server": "mcpline_server"}
RAW = "raw pipe"
KINDS = (*CLIENTS, RAW)
FIGURES = [
    ("start", "start → first tool result", ("start",), "s"),
    ("seq", "sequential calls/s", ("seq", "per_s"), "/s"),
    ("pipe", "calls/s, 100 in flight", ("pipe", "per_s"), "/s"),
    ("seq_cpu", "client CPU per sequential call", ("seq", "cpu_per_call"), "µs"),
    ("pipe_cpu", "client CPU per call, 100 in flight", ("pipe", "cpu_per_call"), "µs"),
]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpline-bench-raw", "version": "1"},
}


class RawPipe:
    """The client floor: one server process, a request line written to its stdin, the reply
    line read from its stdout and decoded."""

    def __init__(self, path: str) -> None:
        self.proc = subprocess.Popen([sys.executable, path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd, self.stdout = self.proc.stdin.fileno(), self.proc.stdout
        params = {"name": "echo", "arguments": {"text": "hello"}, "_meta": META}
        self.head = b'{"jsonrpc":"2.0","id":'
        self.tail = b',"method":"tools/call","params":' + msgspec.json.encode(params) + b"}\n"
        self.next_id = 1

    def send(self) -> None:
        line = self.head + str(self.next_id).encode() + self.tail
        self.next_id += 1
        os.write(self.wfd, line)

    def receive(self) -> int:
        """Read and check one reply line; its id."""
        reply = msgspec.json.decode(self.stdout.readline())
        if reply.get("result", {}).get("content", [{}])[0].get("text") != "hello":
            raise RuntimeError(f"unexpected reply: {reply!r}")
        rid: int = reply["id"]
        return rid

    def call(self) -> None:
        want = self.next_id
        self.send()
        if self.receive() != want:
            raise RuntimeError(f"reply to a request other than {want}")

    def measure(self, seconds: float, window: int) -> dict[str, float]:
        """Like `common.measure`: ``window`` calls in flight for ``seconds``."""
        c0, t0 = time.process_time(), time.perf_counter()
        stop, done = t0 + seconds, 0
        for _ in range(window):
            self.send()
        outstanding = window
        while outstanding:
            self.receive()
            done += 1
            outstanding -= 1
            if time.perf_counter() < stop:
                self.send()
                outstanding += 1
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"per_s": done / elapsed, "cpu_per_call": cpu / done, "calls": done}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


def raw_figures(path: str, seconds: float, started: float) -> dict[str, Any]:
    """`common.echo_figures` for the raw pipe."""
    pipe = RawPipe(path)
    try:
        pipe.call()
        out: dict[str, Any] = {"start": time.perf_counter() - started}
        for _ in range(50):
            pipe.call()
        out["seq"] = pipe.measure(seconds, 1)
        out["pipe"] = pipe.measure(seconds, 100)
        out["era"] = "modern (raw lines)"
        return out
    finally:
        pipe.close()


async def worker(kind: str, server: str, seconds: float) -> dict[str, Any]:
    """Run inside the measuring subprocess: one client kind against one server."""
    path = str(HERE / "servers" / f"{SERVERS[server]}.py")
    started = time.perf_counter()
    if kind == RAW:
        return raw_figures(path, seconds, started)
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


def fmt_unit(unit: str, v: float) -> str:
    """``v`` in ``unit`` (``s``, ``/s`` or seconds shown in µs)."""
    if unit == "s":
        return f"{v:.3f} s"
    if unit == "/s":
        return f"{v:,.0f}/s"
    return f"{v * 1e6:,.1f} µs"


def table(samples: Samples, kinds: list[str]) -> str:
    """One column per client, then mcpline's ratios to the official client and to the raw
    pipe; one row per server and figure."""
    pairs = [
        (a, b) for a, b in (("mcpline", "mcp 2.3.0"), ("mcpline", RAW)) if {a, b} <= set(kinds)
    ]
    rows = [
        "| server | figure (median) | "
        + " | ".join(kinds)
        + "".join(f" | {a} ÷ {b}" for a, b in pairs)
        + " |",
        "|---|---|" + "---|" * (len(kinds) + len(pairs)),
    ]
    for server in SERVERS:
        for _, label, path, unit in FIGURES:
            med = {k: median_at(samples, k, server, path) for k in kinds}
            cells = [fmt_unit(unit, med[k]) for k in kinds]
            cells += [f"{med[a] / med[b]:.2f}×" for a, b in pairs]
            rows.append(f"| {server} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def targets(samples: Samples, kinds: list[str]) -> list[str]:
    def ratio(server: str, fig: str, ref: str) -> float:
        ours, theirs = (median_at(samples, k, server, (fig, "per_s")) for k in ("mcpline", ref))
        return ours / theirs

    lines = []
    if {"mcpline", "mcp 2.3.0"} <= set(kinds):
        for s in SERVERS:
            seq, pipe = ratio(s, "seq", "mcp 2.3.0"), ratio(s, "pipe", "mcp 2.3.0")
            lines.append(
                f"- [{'met' if min(seq, pipe) >= 5 else 'MISSED'}] calls/s through our client ≥ "
                f"5× through the official client, on the {s}: sequential {seq:.1f}×, "
                f"100 in flight {pipe:.1f}×"
            )
    if {"mcpline", RAW} <= set(kinds):
        for s in SERVERS:
            seq, pipe = ratio(s, "seq", RAW), ratio(s, "pipe", RAW)
            lines.append(
                f"- calls/s through our client ÷ through the raw pipe, on the {s}: sequential "
                f"{seq:.2f}×, 100 in flight {pipe:.2f}×"
            )
    return lines


def flat(samples: Samples) -> dict[str, dict[str, list[float]]]:
    """The samples as ``"client → server"`` → figure key → one value per round."""
    out: dict[str, dict[str, list[float]]] = {}
    for (kind, server), rounds in samples.items():
        figs = out.setdefault(f"{kind} → {server}", {})
        for key, _, path, _ in FIGURES:
            for res in rounds:
                v: Any = res
                for part in path:
                    v = v[part]
                figs.setdefault(key, []).append(v)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = common.round_parser(__doc__, 1.5, HERE / "results" / "client.md")
    ap.add_argument("--worker", choices=KINDS)
    ap.add_argument("--server", choices=tuple(SERVERS), default="floor")
    ap.add_argument("--clients", help=f"comma-separated subset of {', '.join(KINDS)}")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(asyncio.run(worker(args.worker, args.server, args.seconds))))
        return 0
    if args.quick:
        args.rounds, args.seconds = 1, 0.5
    kinds = [k for k in KINDS if not args.clients or k in args.clients.split(",")]

    started = dt.datetime.now(dt.timezone.utc)
    samples: Samples = {}
    for rnd in range(args.rounds):
        for server in SERVERS:
            shift = rnd % len(kinds)
            for kind in kinds[shift:] + kinds[:shift]:
                res = run_worker(kind, server, args.seconds)
                samples.setdefault((kind, server), []).append(res)
                print(
                    f"  round {rnd + 1}/{args.rounds} {kind:>10} client → {server}: "
                    f"seq {res['seq']['per_s']:,.0f}/s, "
                    f"100 in flight {res['pipe']['per_s']:,.0f}/s, "
                    f"CPU {res['pipe']['cpu_per_call'] * 1e6:,.0f} µs/call",
                    flush=True,
                )

    report = "\n\n".join(
        [
            "# Client benchmark: mcpline.Client vs mcp.Client (2.3.0) vs a raw pipe",
            f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; {args.rounds} interleaved rounds, "
            f"medians; `python bench/client.py`. Eras: {eras(samples)}",
            table(samples, kinds),
            "## Target",
            "\n".join(targets(samples, kinds)),
        ]
    )
    write_report(report, args.out)
    meta = {"started": started.isoformat(), "machine": machine(), "args": vars(args)}
    Path(args.out).with_suffix(".json").write_text(
        json.dumps({**meta, "samples": flat(samples)}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
