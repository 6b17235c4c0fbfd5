"""How mcpline's cost grows: CPU per call and memory against argument size, requests in
flight and number of registered tools (with ``tools/list`` pagination).

    .venv/bin/python bench/scaling.py            # all three tables (about 2 minutes)
    .venv/bin/python bench/scaling.py --quick

Server CPU comes from /proc (utime + stime), RSS from VmRSS/VmHWM. Nothing here should grow
faster than the work: CPU per MiB flat in argument size, CPU per call flat in requests in
flight, CPU per ``tools/call`` and per listed tool flat in the number of tools.
The tables are written to bench/results/scaling.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import msgspec  # noqa: E402
from common import machine  # noqa: E402
from driver import META, Session, Spec  # noqa: E402

KIB = 1024
MIB = KIB * KIB


def spec(name: str, module: str, env: dict[str, str] | None = None) -> Spec:
    return Spec(name, [sys.executable, str(HERE / "servers" / f"{module}.py")], env or {})


def mib(n: float) -> str:
    return f"{n / MIB:.1f}"


def argument_sizes(quick: bool) -> str:
    sizes = [KIB, 16 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB]
    budget = (16 if quick else 64) * MIB  # bytes echoed per size
    rows = [
        "| argument size | server | calls | wall per call | server CPU per call "
        "| server CPU per MiB | RSS after | peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, module in (("floor", "bare_server"), ("mcpline", "mcpline_server")):
        s = Session(spec(name, module, {"MCPLINE_UVLOOP": "0"}))
        try:
            s.start()
            for size in sizes:
                text = "x" * size
                calls = max(3, min(2000, budget // size))
                s.call("echo", {"text": text})  # warm-up at this size
                u0 = s.usage().cpu
                elapsed, _ = s.burst(1, "echo", {"text": text})
                for _ in range(calls - 1):
                    e, _ = s.burst(1, "echo", {"text": text})
                    elapsed += e
                cpu = (s.usage().cpu - u0) / calls
                mem = s.memory()
                size_label = f"{size // KIB} KiB" if size < MIB else f"{size // MIB} MiB"
                rows.append(
                    f"| {size_label} | {name} | {calls} | {elapsed / calls * 1e3:.2f} ms "
                    f"| {cpu * 1e6:,.0f} µs | {cpu / (size / MIB) * 1e3:,.1f} ms "
                    f"| {mib(mem['VmRSS'])} MiB | {mib(mem['VmHWM'])} MiB |"
                )
                print(rows[-1], flush=True)
            s.close_and_time_exit()
        finally:
            s.kill()
    return "\n".join(rows)


def in_flight(quick: bool) -> str:
    rows = [
        "| requests in flight | calls/s | server CPU per call | RSS after | peak RSS |",
        "|---|---|---|---|---|",
    ]
    s = Session(spec("mcpline", "mcpline_server", {"MCPLINE_UVLOOP": "0"}))
    try:
        s.start()
        for window in (1, 10, 100, 1000):
            s.throughput(0.2, window)  # warm-up at this depth
            res = s.throughput(0.5 if quick else 1.5, window)
            mem = s.memory()
            rows.append(
                f"| {window:,} | {res['per_s']:,.0f} | {res['cpu_per_call'] * 1e6:,.1f} µs "
                f"| {mib(mem['VmRSS'])} MiB | {mib(mem['VmHWM'])} MiB |"
            )
            print(rows[-1], flush=True)
        s.close_and_time_exit()
    finally:
        s.kill()
    return "\n".join(rows)


def walk(s: Session, decode: Any) -> tuple[int, int]:
    """Fetch every page of ``tools/list``; return (tools listed, pages)."""
    cursor = None
    pages = listed = 0
    while True:
        params: dict[str, object] = {"_meta": META}
        if cursor is not None:
            params["cursor"] = cursor
        reply = s.roundtrip(s._req_line(s._take_id(), "tools/list", params))
        result = decode(bytes(reply.result))
        pages += 1
        listed += len(result["tools"])
        cursor = result.get("nextCursor")
        if cursor is None:
            return listed, pages


def tool_counts(quick: bool) -> str:
    rows = [
        "| tools | start-up (spawn → discover reply) | idle RSS | server CPU per `tools/call` "
        "| pages | server CPU per page | server CPU per listed tool |",
        "|---|---|---|---|---|---|---|",
    ]
    decode = msgspec.json.Decoder().decode
    walk_seconds = 0.5 if quick else 1.5
    for count in (10, 100, 1000) if quick else (10, 100, 1000, 10_000):
        env = {"MCPLINE_UVLOOP": "0", "BENCH_TOOLS": str(count)}
        s = Session(spec("mcpline", "many_tools_server", env))
        try:
            startup = s.start()
            idle = s.memory()["VmRSS"]
            res = s.throughput(0.5 if quick else 1.0, 100, f"echo_{count - 1}")
            # Walk every page of tools/list, once to warm up, then again until at least
            # `walk_seconds` have passed (CPU is counted in 10 ms ticks).
            listed, pages = walk(s, decode)
            u0, t0, walks = s.usage().cpu, time.perf_counter(), 0
            while walks < 1 or time.perf_counter() - t0 < walk_seconds:
                walk(s, decode)
                walks += 1
            cpu = (s.usage().cpu - u0) / walks
            if listed != count:
                raise RuntimeError(f"tools/list returned {listed} tools, expected {count}")
            rows.append(
                f"| {count:,} | {startup:.3f} s | {mib(idle)} MiB "
                f"| {res['cpu_per_call'] * 1e6:,.1f} µs "
                f"| {pages} | {cpu / pages * 1e6:,.0f} µs | {cpu / listed * 1e6:,.1f} µs |"
            )
            print(rows[-1], flush=True)
            s.close_and_time_exit()
        finally:
            s.kill()
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "scaling.md"))
    args = ap.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    parts = [
        "# How mcpline's cost grows",
        f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; `python bench/scaling.py`. "
        "Server CPU from /proc (utime + stime); CPU is counted in 10 ms ticks, so figures "
        "from short phases carry that granularity.",
        "## Against argument size (sequential `echo`, 1 KiB … 16 MiB)",
        argument_sizes(args.quick),
        "## Against requests in flight (pipelined `echo`)",
        in_flight(args.quick),
        "## Against registered tools (`tools/call` on the last tool; every `tools/list` page)",
        tool_counts(args.quick),
    ]
    text = "\n\n".join(parts) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
