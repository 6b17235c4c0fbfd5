"""Where mcpline's server CPU goes, by layer: the floor, mcpline's transport front alone,
the front with the bare required steps of a call, and mcpline, over HTTP and over stdio.

    .venv/bin/python bench/layers.py              # 5 interleaved rounds (about 10 minutes)
    .venv/bin/python bench/layers.py --rounds 1   # to check that it works

Four servers per transport:

- the floor: over HTTP ``asgi_floor_server.py``, a bare ASGI app on the same uvicorn that
  reads the body, decodes it and returns the echo result; over stdio ``bare_server.py``,
  which reads a line, decodes it and writes the reply;
- mcpline's front, ``mcpline_front_server.py``: mcpline's transport up to the JSON-RPC parse
  (over HTTP: routing, the Host/Origin screen, admission and per-client shares, the body's
  limits and budget, the headers; over stdio: framing, parse, coalesced writes), then the
  floor's own reply, with no MCP handling;
- the required steps, the same server with ``MCPLINE_LAYER=steps``: the front, then only the
  steps a correct answer cannot skip, in one straight line (the ``_meta`` and header checks,
  finding the tool, validating and binding its arguments, the timed call, the result's shape,
  the encode) with no engine, exchange, peer or `Context`: a lower bound on the MCP handling;
- mcpline, ``mcpline_server.py``.

HTTP is driven by wrk at 16 clients with ``echo`` (a plain ``def``) and ``aecho``
(``async def``) as `bench/http_server.py` drives it; stdio with 100 calls in flight, as
`bench/run.py` does for its pipelined figures. The figure is server CPU per request (user +
system time from /proc over the run ÷ requests answered): unlike requests/s it does not
depend on what else the machine is doing. Each layer's cost is the difference of two
medians, and the report ends with what each of issue 25's ratio goals to the floor leaves
for the MCP handling once the front is paid for. Written to bench/results/layers.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import machine, median  # noqa: E402
from driver import Session  # noqa: E402
from driver import Spec as StdioSpec  # noqa: E402
from http_server import FLOOR, LOADS, PER_CLIENT_CAPS, Running, Spec, drive  # noqa: E402
from loadgen import wrk_binary  # noqa: E402

FRONT = "mcpline's front"
STEPS = "front + required steps"
MCPLINE = "mcpline"
NAMES = (FLOOR, FRONT, STEPS, MCPLINE)
FIGURES = ("http echo", "http aecho", "stdio echo", "stdio aecho")
GOALS = {"http echo": 2.0, "http aecho": 1.5, "stdio echo": 3.5, "stdio aecho": 3.5}
"""Issue 25's goals for server CPU per request, as a ratio to the floor's (stdio's, for
pipelined calls, holds for either tool)."""
HTTP_LOADS = {f"http {load.tool}": load for load in LOADS if load.key in ("echo16", "aecho16")}
"""`bench/http_server.py`'s loads at 16 clients."""


def stdio_specs() -> list[StdioSpec]:
    servers = HERE / "servers"
    env = {"MCPLINE_UVLOOP": "0"}
    return [
        StdioSpec(FLOOR, [sys.executable, str(servers / "bare_server.py")]),
        StdioSpec(FRONT, [sys.executable, str(servers / "mcpline_front_server.py")], env),
        StdioSpec(
            STEPS,
            [sys.executable, str(servers / "mcpline_front_server.py")],
            {**env, "MCPLINE_LAYER": "steps"},
        ),
        StdioSpec(MCPLINE, [sys.executable, str(servers / "mcpline_server.py")], env),
    ]


def stdio_cpu(spec: StdioSpec, seconds: float) -> dict[str, float]:
    """Microseconds of server CPU per pipelined call (100 in flight) of each tool."""
    session = Session(spec)
    try:
        session.start()
        out = {}
        for tool in ("echo", "aecho"):
            session.throughput(1.0, 100, tool)  # warm-up
            out[f"stdio {tool}"] = session.throughput(seconds, 100, tool)["cpu_per_call"] * 1e6
        session.close_and_time_exit()
        return out
    finally:
        session.kill()


def http_specs() -> list[Spec]:
    mcpline = str(Path(sys.executable).parent / "mcpline")
    bind = ["127.0.0.1:{port}", *PER_CLIENT_CAPS]
    servers = HERE / "servers"
    front = [mcpline, "run", str(servers / "mcpline_front_server.py"), "--http", *bind]
    return [
        Spec(FLOOR, [sys.executable, str(servers / "asgi_floor_server.py"), "{port}"]),
        Spec(FRONT, front),
        Spec(STEPS, front, {"MCPLINE_LAYER": "steps"}),
        Spec(MCPLINE, [mcpline, "run", str(servers / "mcpline_server.py"), "--http", *bind]),
    ]


def http_cpu(spec: Spec, seconds: float) -> dict[str, float]:
    """Microseconds of server CPU per HTTP request of each tool at 16 clients (each reply
    checked, as `bench/http_server.py` checks it)."""
    wrk = wrk_binary()
    run = Running(spec)
    try:
        out = {}
        for key, load in HTTP_LOADS.items():
            drive(wrk, run, load, 1)  # warm-up
            out[key] = drive(wrk, run, load, seconds)[1] * 1e6
        return out
    finally:
        run.stop()


def report(figures: dict[str, dict[str, list[float]]], rounds: int, seconds: float) -> str:
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Server CPU by layer",
        "",
        f"Run {when} on {machine()}; {rounds} interleaved rounds of {seconds:g} s per figure,"
        " medians. HTTP: wrk at 16 clients, every request a 2026-07-28 `tools/call` with its"
        " `_meta` and mirrored headers; stdio: 100 calls in flight.",
        "",
        "| server CPU per request (µs) | " + " | ".join(FIGURES) + " |",
        "|---|" + "---|" * len(FIGURES),
    ]
    med = {name: {t: median(v) for t, v in per.items()} for name, per in figures.items()}
    for name in NAMES:
        cells = [f"{med[name][t]:.1f} ({med[name][t] / med[FLOOR][t]:.2f}× floor)" for t in FIGURES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Per layer, and what each goal leaves for the MCP handling:", ""]
    for t in FIGURES:
        floor, front, steps, full = (med[n][t] for n in (FLOOR, FRONT, STEPS, MCPLINE))
        allowed = GOALS[t] * floor
        line = (
            f"- {t}: the front costs {front - floor:.1f} µs over the floor; the MCP handling"
            f" {full - front:.1f} µs more, of which the bare required steps {steps - front:.1f} µs;"
            f" the goal of ≤ {GOALS[t]:g}× the floor ({allowed:.1f} µs) leaves"
            f" {allowed - front:.1f} µs for the MCP handling after the front"
        )
        lines.append(line + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "layers.md")
    args = ap.parse_args(argv)
    figures: dict[str, dict[str, list[float]]] = {n: {t: [] for t in FIGURES} for n in NAMES}
    jobs: list[tuple[str, Callable[[], dict[str, float]]]] = []
    for spec in http_specs():
        jobs.append((spec.name, functools.partial(http_cpu, spec, args.seconds)))
    for sspec in stdio_specs():
        jobs.append((sspec.name, functools.partial(stdio_cpu, sspec, args.seconds)))
    for r in range(args.rounds):
        shift = r % len(jobs)
        for name, job in jobs[shift:] + jobs[:shift]:
            for key, us in job().items():
                figures[name][key].append(us)
                print(f"round {r + 1}: {name}, {key}: {us:.1f} µs", flush=True)
    text = report(figures, args.rounds, args.seconds)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
