"""Two versions of mcpline on this machine, interleaved: every figure's ratio B ÷ A.

    .venv/bin/python bench/compare.py main              # main vs the working tree
    .venv/bin/python bench/compare.py A B --bench run,http,client --rounds 5
    .venv/bin/python bench/compare.py main HEAD --quick # a short check that it works

A and B are anything ``git rev-parse`` takes, or ``.`` for the working tree with its
uncommitted changes (B's default). Each commit's ``src/`` is exported with ``git archive``
to a temporary directory, removed at the end, on failure too. The bench scripts of this
working tree measure both sides (the same harness, the same servers' files), run by this
interpreter with ``PYTHONPATH=<that side's src>``, which comes before the editable install
(checked: each side must import mcpline from its own ``src/``); the dependencies are this
environment's.

Each round runs every selected script (``--bench``: ``run`` = bench/run.py, ``http`` =
bench/http_server.py, ``client`` = bench/client.py; default ``run,http``) once for A and
once for B, the order alternating round by round; each run is one round of that script
(``--quick``: its quick round) on the floors and mcpline only, and its samples are read
back from its ``--out`` JSON. Per figure: A's and B's medians over the rounds, the median of
the rounds' ratios B ÷ A (each round's A and B ran minutes apart, under the same load), and
their min–max. The floors and the raw pipe do not run the code under test: their ratios
are the noise. Written to bench/results/compare.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from common import machine, median  # noqa: E402

WORKTREE = "."
RUN_TIMEOUT = 3600


@dataclass(frozen=True)
class Figure:
    label: str
    higher_is_better: bool
    fmt: Callable[[float], str]


def run_figures() -> dict[str, Figure]:
    import run

    return {f.key: Figure(f.label, f.higher_is_better, f.fmt) for f in run.FIGURES}


def http_figures() -> dict[str, Figure]:
    import http_server as http

    return {f.key: Figure(f.label, f.higher_is_better, f.fmt)
            for f in http.FIGURES if not f.key.endswith(http.NO_RATIO)}  # fmt: skip


def client_figures() -> dict[str, Figure]:
    import client

    def fmt(unit: str) -> Callable[[float], str]:
        return lambda v: client.fmt_unit(unit, v)

    return {k: Figure(label, unit == "/s", fmt(unit)) for k, label, _, unit in client.FIGURES}


@dataclass(frozen=True)
class Bench:
    script: str
    args: list[str]
    """Options for every run of the script (which servers or clients)."""
    figures: Callable[[], dict[str, Figure]]
    """The script's figures by key, imported from it (one source of labels and units)."""


BENCHES = {
    "run": Bench("run.py", ["--servers", "floor,mcpline"], run_figures),
    "http": Bench("http_server.py", ["--servers", "floor,mcpline"], http_figures),
    "client": Bench("client.py", ["--clients", "mcpline,raw pipe"], client_figures),
}

Samples = dict[str, dict[str, list[float]]]
"""server (or client → server) → figure key → one value per round."""


class CompareError(RuntimeError):
    """A revision could not be had, or a bench run failed."""


def git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompareError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


@dataclass(frozen=True)
class Side:
    name: str
    """``A`` or ``B``."""
    rev: str
    src: Path
    description: str


def prepare(name: str, rev: str, tmp: Path) -> Side:
    """The side's ``src/``: the working tree's own, or a commit's exported under ``tmp``."""
    if rev == WORKTREE:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "src")
        desc = f"working tree at {head}" + (" + uncommitted changes in src/" if dirty else "")
        return Side(name, rev, REPO / "src", desc)
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    subject = git("log", "-1", "--format=%s", sha)
    desc = f"{sha[:10]} ({rev}): {subject[:80]}{'…' if len(subject) > 80 else ''}"
    archive, root = tmp / f"{name}.tar", tmp / name
    git("archive", "--format=tar", "-o", str(archive), sha, "src")
    root.mkdir()
    subprocess.run(["tar", "-x", "-f", str(archive), "-C", str(root)], check=True)
    archive.unlink()
    return Side(name, rev, root / "src", desc)


def environ(side: Side) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(side.src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def check_import(side: Side) -> None:
    """Byte-compile ``side``'s ``src/`` (so that no first run pays for it); fail unless
    its environment imports mcpline from there."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(side.src)], check=True,
                   env=environ(side), stdout=subprocess.DEVNULL)  # fmt: skip
    probe = subprocess.run(
        [sys.executable, "-c", "import mcpline; print(mcpline.__file__)"],
        env=environ(side),
        capture_output=True,
        text=True,
    )
    got = probe.stdout.strip()
    if probe.returncode != 0 or not Path(got).is_relative_to(side.src):
        raise CompareError(f"{side.name}: mcpline imported from {got or probe.stderr[-500:]!r}, "
                           f"not from {side.src}")  # fmt: skip


STOPPABLE = (
    "import os, runpy, signal, sys\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv = sys.argv[1:]\n"
    "sys.path[0] = os.path.dirname(sys.argv[0])\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
"""Runs a bench script so that SIGTERM or SIGINT unwinds it: its ``finally`` blocks stop the
servers it started."""


def run_once(side: Side, bench: Bench, quick: bool, out: Path) -> Samples:
    """One round of ``bench`` against ``side``; its samples. Stopped by an exception here
    (^C, SIGTERM, the timeout), the script gets SIGTERM and time to stop its servers."""
    argv = [sys.executable, "-c", STOPPABLE, str(HERE / bench.script), *bench.args]
    argv += ["--out", str(out), *(["--quick"] if quick else ["--rounds", "1"])]
    proc = subprocess.Popen(argv, env=environ(side), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except BaseException:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise
    if proc.returncode != 0:
        raise CompareError(
            f"{bench.script} on {side.name} ({side.rev}) failed with {proc.returncode}:\n"
            f"{stdout[-2000:]}\n{stderr[-3000:]}"
        )
    saved = json.loads(out.with_suffix(".json").read_text())
    samples: Samples = saved["samples"]
    return samples


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}×" if len(values) > 1 else "–"


def verdict(fig: Figure, ratios: list[float]) -> str:
    """``B better``/``B worse`` when every one of 3 or more rounds says so, else ``≈``."""
    if len(ratios) < 3:
        return ""
    if min(ratios) > 1 or max(ratios) < 1:
        return "B better" if (min(ratios) > 1) == fig.higher_is_better else "B worse"
    return "≈"


def table(bench: Bench, a: Samples, b: Samples) -> str:
    figures = bench.figures()
    rows = [
        "| server | figure | A | B | B ÷ A (median of rounds) | min–max | all rounds |",
        "|---|---|---|---|---|---|---|",
    ]
    for server in a:
        if server not in b:
            continue
        for key, fig in figures.items():
            va, vb = a[server].get(key), b[server].get(key)
            if not va or not vb:
                continue
            ratios = [y / x for x, y in zip(va, vb, strict=False) if x]
            if not ratios:
                continue
            arrow = "↑" if fig.higher_is_better else "↓"
            rows.append(
                f"| {server} | {fig.label} {arrow} | {fig.fmt(median(va))} | "
                f"{fig.fmt(median(vb))} | {median(ratios):.2f}× | {spread(ratios)} | "
                f"{verdict(fig, ratios)} |"
            )
    return "\n".join(rows)


def merge(into: Samples, got: Samples) -> None:
    for server, figs in got.items():
        for key, values in figs.items():
            into.setdefault(server, {}).setdefault(key, []).extend(values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("a", metavar="A", help="the baseline: a git revision, or . (working tree)")
    ap.add_argument("b", metavar="B", nargs="?", default=WORKTREE, help="default: .")
    ap.add_argument("--bench", default="run,http", help="comma-separated: run, http, client")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 5; --quick: 2)")
    ap.add_argument("--quick", action="store_true", help="each script's quick round")
    ap.add_argument("--out", default=str(HERE / "results" / "compare.md"))
    args = ap.parse_args(argv)
    names = args.bench.split(",")
    if unknown := [n for n in names if n not in BENCHES]:
        ap.error(f"unknown --bench {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    rounds = args.rounds or (2 if args.quick else 5)

    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    results: dict[str, dict[str, Samples]] = {n: {"A": {}, "B": {}} for n in names}
    with tempfile.TemporaryDirectory(prefix="mcpline-compare-") as tmp:
        sides = [prepare("A", args.a, Path(tmp)), prepare("B", args.b, Path(tmp))]
        for side in sides:
            check_import(side)
            print(f"{side.name} = {side.description}", flush=True)
        for rnd in range(rounds):
            order = sides if rnd % 2 == 0 else sides[::-1]
            for name in names:
                for side in order:
                    t0 = time.monotonic()
                    out = Path(tmp) / f"{name}-{side.name}-{rnd}.md"
                    merge(results[name][side.name], run_once(side, BENCHES[name], args.quick, out))
                    print(f"  round {rnd + 1}/{rounds} {name:>6} {side.name}: "
                          f"{time.monotonic() - t0:.0f} s", flush=True)  # fmt: skip

    header = (
        f"A = {sides[0].description}\n\nB = {sides[1].description}\n\n"
        f"Run {started:%Y-%m-%d %H:%M} UTC on {machine()}; `bench/compare.py "
        f"{args.a} {args.b} --bench {args.bench}{' --quick' if args.quick else ''}`: {rounds} "
        f"interleaved rounds (A first in odd rounds), each one "
        f"{'quick round' if args.quick else 'round'} of each script per side. Load average "
        f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after.\n\n"
        "B ÷ A is taken round by round; its median and min–max over the rounds (↑ higher is "
        "better, ↓ lower is better). *all rounds*: B better or worse when every round (3 or "
        "more) agrees, ≈ otherwise. The floors and the raw pipe do not run the code under "
        "test: their B ÷ A is the noise of this run."
    )
    sections = [
        f"## {name} (bench/{BENCHES[name].script})\n\n"
        + table(BENCHES[name], results[name]["A"], results[name]["B"])
        for name in names
    ]
    report = "\n\n".join(["# Compare: B ÷ A", header, *sections])
    print()
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report + "\n")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the temporary tree goes
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        raise SystemExit(main())
    except CompareError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
