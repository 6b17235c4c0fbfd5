"""What the built-in middleware cost: the bench echo server over stdio with none, a no-op
function, logging (text, JSON lines), timing and metrics, interleaved round by round.

    .venv/bin/python bench/middleware.py              # 5 rounds (about a minute)
    .venv/bin/python bench/middleware.py --rounds 1   # a short check that it works

Per configuration: the median over the rounds of server CPU per pipelined ``aecho`` call
(user + system, every thread; 32 in flight, stderr to a file) and its difference to the
server without middleware, and of calls per second (wall time: on a shared machine, noise).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from driver import Session, Spec  # noqa: E402

CONFIGS = ("", "noop", "log", "json", "timing", "metrics", "log,metrics")


def measure(mw: str, duration: float) -> dict[str, float]:
    spec = Spec(mw or "none", [sys.executable, str(HERE / "servers" / "middleware_server.py")])
    spec.env["BENCH_MW"] = mw
    session = Session(spec)
    session.start()
    try:
        session.throughput(0.3, 32, "aecho")  # warm-up
        return session.throughput(duration, 32, "aecho")
    finally:
        session.close_and_time_exit()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5, help="per configuration and round")
    args = ap.parse_args()
    cpu: dict[str, list[float]] = {c: [] for c in CONFIGS}
    rate: dict[str, list[float]] = {c: [] for c in CONFIGS}
    for r in range(args.rounds):
        order = CONFIGS[r % len(CONFIGS) :] + CONFIGS[: r % len(CONFIGS)]
        for mw in order:
            got = measure(mw, args.seconds)
            cpu[mw].append(got["cpu_per_call"] * 1e6)
            rate[mw].append(got["per_s"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    base = statistics.median(cpu[""])
    print("| middleware | server CPU per call | over none | calls/s |")
    print("|---|---|---|---|")
    for mw in CONFIGS:
        c = statistics.median(cpu[mw])
        print(
            f"| {mw or 'none'} | {c:.1f} µs | {c - base:+.1f} µs | "
            f"{statistics.median(rate[mw]):,.0f}/s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
