"""Side-by-side server benchmark: mcpline vs the official `mcp` SDK vs FastMCP vs a bare floor.

    .venv/bin/python bench/run.py            # full run (about 2-3 minutes)
    .venv/bin/python bench/run.py --quick    # one short round, to check that it works

Every figure is measured for every server in the same run, servers interleaved round by
round (the order rotates each round), and the median over rounds is printed with its ratio
to mcp 2.3.0 and to the floor. Server CPU is user + system time (Linux /proc, elsewhere
psutil), not wall time.
The table is written to bench/results/latest.md and every sample to latest.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import figure_table, machine, median, ratio  # noqa: E402
from driver import BenchError, Session, Spec  # noqa: E402

MIB = 1 << 20


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    scale: float
    higher_is_better: bool

    def fmt(self, value: float) -> str:
        v = value * self.scale
        if self.unit == "/s":
            return f"{v:,.0f}/s"
        if self.unit == "s":
            return f"{v:.3f} s"
        if self.unit == "µs":
            return f"{v:,.1f} µs" if v < 100 else f"{v:,.0f} µs"
        if self.unit == "MiB":
            return f"{v:.1f} MiB"
        return f"{v:g} {self.unit}"


FIGURES = [
    Figure("cold", "cold start → first reply (discover)", "s", 1, False),
    Figure("seq", "sequential `tools/call` echo (sync tool)", "/s", 1, True),
    Figure("pipe", "pipelined echo, 100 in flight (sync tool)", "/s", 1, True),
    Figure("cpu_pipe", "server CPU per pipelined call", "µs", 1e6, False),
    Figure("cpu_seq", "server CPU per sequential call", "µs", 1e6, False),
    Figure("seq_async", "sequential echo, async tool", "/s", 1, True),
    Figure("pipe_async", "pipelined echo, async tool, 100 in flight", "/s", 1, True),
    Figure("cpu_pipe_async", "server CPU per pipelined call, async tool", "µs", 1e6, False),
    Figure("sleeps", "50 × `sleep(200 ms)` at once", "s", 1, False),
    Figure("big", "5 MiB argument echo round trip", "s", 1, False),
    Figure("idle_rss", "idle RSS after discover", "MiB", 1 / MIB, False),
    Figure("peak_rss", "peak RSS (VmHWM, after the 5 MiB echo)", "MiB", 1 / MIB, False),
    Figure("exit", "exit after stdin EOF (idle)", "s", 1, False),
]
BY_KEY = {f.key: f for f in FIGURES}


def python() -> str:
    return sys.executable


def has_uvloop(env: dict[str, str]) -> bool:
    probe = subprocess.run(
        [python(), "-c", "import uvloop"], env={**os.environ, **env}, capture_output=True
    )
    return probe.returncode == 0


def servers(selected: list[str] | None) -> list[Spec]:
    def spec(name: str, module: str, env: dict[str, str] | None = None) -> Spec:
        return Spec(name, [python(), str(HERE / "servers" / f"{module}.py")], env or {})

    specs = [
        spec("floor", "bare_server"),
        spec("mcpline", "mcpline_server", {"MCPLINE_UVLOOP": "0"}),
    ]
    if has_uvloop({}):
        specs.append(spec("mcpline+uvloop", "mcpline_server", {"MCPLINE_UVLOOP": "1"}))
    specs += [spec("mcp 2.3.0", "mcp_server"), spec("FastMCP 4.1.6", "fastmcp_server")]
    if selected:
        specs = [s for s in specs if s.name in selected]
    return specs


def battery(spec: Spec, args: argparse.Namespace) -> tuple[dict[str, list[float]], str]:
    """Every figure for one server, in one process (cold start and exit included)."""
    out: dict[str, list[float]] = {}
    s = Session(spec)
    try:
        out["cold"] = [s.start()]
        out["idle_rss"] = [float(s.memory()["VmRSS"])]
        for _ in range(20):  # untimed warm-up: lazy imports and first-call caches
            s.call("echo", {"text": "warm-up"})
        seq = s.throughput(args.seq_seconds, 1)
        out["seq"] = [seq["per_s"]]
        out["cpu_seq"] = [seq["cpu_per_call"]]
        pipe = s.throughput(args.pipe_seconds, 100)
        out["pipe"] = [pipe["per_s"]]
        out["cpu_pipe"] = [pipe["cpu_per_call"]]
        seq = s.throughput(args.seq_seconds, 1, "aecho")
        out["seq_async"] = [seq["per_s"]]
        pipe = s.throughput(args.pipe_seconds, 100, "aecho")
        out["pipe_async"] = [pipe["per_s"]]
        out["cpu_pipe_async"] = [pipe["cpu_per_call"]]
        elapsed, replies = s.burst(50, "sleep", {"ms": 200})
        if len(replies) != 50:
            raise BenchError(f"{spec.name}: {len(replies)} sleep replies, expected 50")
        out["sleeps"] = [elapsed]
        text = "x" * (5 * MIB)
        out["big"] = []
        for _ in range(args.big_repeats):
            elapsed, replies = s.burst(1, "echo", {"text": text})
            if text not in bytes(replies[0].result).decode():
                raise BenchError(f"{spec.name}: the 5 MiB echo did not come back intact")
            out["big"].append(elapsed)
        out["peak_rss"] = [float(s.memory()["VmHWM"])]
        time.sleep(0.05)
        out["exit"] = [s.close_and_time_exit()]
        return out, s.era
    finally:
        s.kill()


def spread(values: list[float]) -> float:
    """(max - min) / median: how noisy a figure was over the rounds."""
    m = median(values)
    return (max(values) - min(values)) / m if m else 0.0


def table(results: dict[str, dict[str, list[float]]], names: list[str]) -> str:
    ref_mcp = "mcp 2.3.0" if "mcp 2.3.0" in results else None
    ref_floor = "floor" if "floor" in results else None

    def label(fig: Figure) -> str:
        return f"{fig.label} {'↑' if fig.higher_is_better else '↓'}"

    def note(name: str, fig: Figure, v: float) -> str:
        extras = []
        if ref_mcp and name != ref_mcp and results[ref_mcp].get(fig.key):
            extras.append(f"{ratio(v, median(results[ref_mcp][fig.key]))} mcp")
        if ref_floor and name != ref_floor and results[ref_floor].get(fig.key):
            extras.append(f"{ratio(v, median(results[ref_floor][fig.key]))} floor")
        return " (" + ", ".join(extras) + ")" if extras else ""

    return figure_table(results, names, FIGURES, label, note)


def spread_table(results: dict[str, dict[str, list[float]]], names: list[str]) -> str:
    lines = [
        "| figure: (max − min) / median | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for fig in FIGURES:
        cells = []
        for name in names:
            samples = results[name].get(fig.key)
            cells.append(f"{spread(samples):.0%}" if samples and len(samples) > 1 else "–")
        lines.append(f"| {fig.key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


TARGETS: list[tuple[str, str, Any]] = [
    ("server CPU per pipelined call ≤ 50 µs", "cpu_pipe", lambda r, m, f: r["cpu_pipe"] <= 50e-6),
    (
        "server CPU per pipelined call ≥ 19× less than mcp",
        "cpu_pipe",
        lambda r, m, f: m is not None and m["cpu_pipe"] / r["cpu_pipe"] >= 19,
    ),
    (
        "sequential calls/s ≥ 0.5× floor",
        "seq",
        lambda r, m, f: f is not None and r["seq"] >= 0.5 * f["seq"],
    ),
    (
        "pipelined calls/s ≥ 20× mcp",
        "pipe",
        lambda r, m, f: m is not None and r["pipe"] >= 20 * m["pipe"],
    ),
    ("cold start to first discover reply ≤ 0.15 s", "cold", lambda r, m, f: r["cold"] <= 0.15),
    ("idle RSS ≤ 25 MiB", "idle_rss", lambda r, m, f: r["idle_rss"] <= 25 * MIB),
    ("50 × 200 ms concurrent sleeps ≤ 0.25 s", "sleeps", lambda r, m, f: r["sleeps"] <= 0.25),
    (
        "5 MiB echo ≤ 1.5× floor",
        "big",
        lambda r, m, f: f is not None and r["big"] <= 1.5 * f["big"],
    ),
    ("exit after EOF ≤ 0.05 s when idle", "exit", lambda r, m, f: r["exit"] <= 0.05),
]


def targets(results: dict[str, dict[str, list[float]]], name: str) -> str:
    med = {n: {k: median(v) for k, v in figs.items()} for n, figs in results.items()}
    r, m, f = med[name], med.get("mcp 2.3.0"), med.get("floor")
    lines = [f"Targets for {name}:"]
    for label, key, check in TARGETS:
        ok = check(r, m, f)
        extra = []
        if m and key in m:
            extra.append(f"{ratio(r[key], m[key])} mcp")
        if f and key in f:
            extra.append(f"{ratio(r[key], f[key])} floor")
        verdict = "met" if ok else "MISSED"
        lines.append(f"- [{verdict}] {label}: {BY_KEY[key].fmt(r[key])} ({', '.join(extra)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--seq-seconds", type=float, default=1.0)
    ap.add_argument("--pipe-seconds", type=float, default=2.0)
    ap.add_argument("--big-repeats", type=int, default=3)
    ap.add_argument("--servers", help="comma-separated subset, e.g. 'floor,mcpline'")
    ap.add_argument("--quick", action="store_true", help="one short round")
    ap.add_argument("--out", default=str(HERE / "results" / "latest"), help="results path stem")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.seq_seconds, args.pipe_seconds, args.big_repeats = 1, 0.3, 0.5, 1

    specs = servers(args.servers.split(",") if args.servers else None)
    names = [s.name for s in specs]
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    print(f"servers: {', '.join(names)}; {args.rounds} round(s)", flush=True)
    # Warm-up: byte-compile and page in every server once, untimed.
    for spec in specs:
        s = Session(spec)
        try:
            s.start()
            s.close_and_time_exit()
        finally:
            s.kill()
    results: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    eras: dict[str, str] = {}
    for rnd in range(args.rounds):
        order = specs[rnd % len(specs) :] + specs[: rnd % len(specs)]
        for spec in order:
            figs, era = battery(spec, args)
            eras[spec.name] = era
            for key, values in figs.items():
                results[spec.name].setdefault(key, []).extend(values)
            print(
                f"  round {rnd + 1}/{args.rounds} {spec.name:>14}: "
                f"seq {figs['seq'][0]:,.0f}/s, pipe {figs['pipe'][0]:,.0f}/s, "
                f"cpu {figs['cpu_pipe'][0] * 1e6:,.1f} µs/call",
                flush=True,
            )
    load_after = os.getloadavg()

    spoken = {
        "modern": "2026-07-28 per-request _meta, no handshake",
        "legacy": "initialize handshake (done before timing)",
    }
    era_note = "; ".join(f"{n}: {spoken[e]}" for n, e in eras.items())
    header = (
        f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}.\n"
        f"{args.rounds} interleaved rounds; medians; ratios are value ÷ reference "
        f"(↑ higher is better, ↓ lower is better). Load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after (a shared machine: other work was running).\n"
        f"Eras spoken by the driver: {era_note}."
    )
    main_table = table(results, names)
    target_lines = [targets(results, n) for n in names if n.startswith("mcpline")]
    report = "\n\n".join(
        [header, main_table, "Noise over the rounds:", spread_table(results, names), *target_lines]
    )
    print()
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    markdown = report.replace("Targets for", "## Targets for")
    out.with_suffix(".md").write_text("# Benchmark results\n\n" + markdown + "\n")
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "started": started.isoformat(),
                "machine": machine(),
                "args": vars(args),
                "eras": eras,
                "load": [load_before, load_after],
                "samples": results,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"\nwritten: {out.with_suffix('.md')}, {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
