"""What the bench scripts share: timed call loops, medians and ratios, the Markdown tables of
figures, and writing a report."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mcpline import _platform

CLIENTS = ("mcpline", "mcp 2.3.0")
"""The two clients of the client benchmarks: the first is compared with the second."""

Samples = dict[tuple[str, str], list[dict[str, Any]]]
"""(client, server) → one worker's figures per round."""


def round_parser(doc: str | None, seconds: float, out: Path) -> argparse.ArgumentParser:
    """The options of a benchmark run in interleaved rounds: ``--rounds`` (3), ``--seconds``
    per figure, ``--quick`` and ``--out`` (the report's file)."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=seconds)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(out))
    return ap


async def measure(
    call: Callable[[], Awaitable[Any]], seconds: float, window: int
) -> dict[str, float]:
    """Calls/s and this process's CPU per call, ``window`` calls in flight for ``seconds``."""
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


def _check_echo(result: Any) -> None:
    if isinstance(result, dict):
        ok = not result.get("isError") and result["content"][0]["text"] == "hello"
    else:  # the SDK's CallToolResult model
        ok = not result.is_error and result.content[0].text == "hello"
    if not ok:
        raise RuntimeError(f"unexpected tool result: {result!r}")


async def echo_figures(
    client: Any, tool: str, seconds: float, started: float | None = None
) -> dict[str, Any]:
    """Through ``client`` (either library's), call ``tool`` with ``hello`` once (``start``: the
    seconds since ``started``, when given), 50 times more, then measure it with 1 (``seq``) and
    100 (``pipe``) calls in flight."""

    async def call() -> None:
        _check_echo(await client.call_tool(tool, {"text": "hello"}))

    await call()
    out: dict[str, Any] = {} if started is None else {"start": time.perf_counter() - started}
    for _ in range(50):
        await call()
    out["seq"] = await measure(call, seconds, 1)
    out["pipe"] = await measure(call, seconds, 100)
    return out


def run_worker(argv: list[str], failure: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python ARGV`` and return the JSON object on the last line it printed."""
    proc = subprocess.run([sys.executable, *argv], capture_output=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{failure} failed:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def machine() -> str:
    """One line about this machine for a report: CPUs, model, memory, OS, Python."""
    return _platform.machine()


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratio(value: float, ref: float | None) -> str:
    """``value ÷ ref`` as ``1.23×``, ``12.3×`` or ``123×``; ``–`` without a reference."""
    if not ref:
        return "–"
    r = value / ref
    return f"{r:.2f}×" if r < 10 else f"{r:.1f}×" if r < 100 else f"{r:.0f}×"


def median_at(samples: Samples, client: str, server: str, path: Sequence[str]) -> float:
    """The median over the rounds of the figure at ``path`` in each round's figures."""
    values: list[float] = []
    for figures in samples[(client, server)]:
        v: Any = figures
        for p in path:
            v = v[p]
        values.append(v)
    return median(values)


def _in(unit: str, v: float) -> str:
    if unit == "s":
        return f"{v:.3f} s"
    if unit == "/s":
        return f"{v:,.0f}/s"
    return f"{v * 1e6:,.0f} µs"


def client_table(
    samples: Samples, servers: Iterable[str], figures: Sequence[tuple[str, tuple[str, ...], str]]
) -> str:
    """The two clients side by side, one row per server and figure (label, path, unit: ``s``,
    ``/s`` or ``µs``)."""
    rows = [
        "| server | figure (median) | mcpline client | mcp 2.3.0 client | mcpline ÷ mcp |",
        "|---|---|---|---|---|",
    ]
    for server in servers:
        for label, path, unit in figures:
            a, b = (median_at(samples, client, server, path) for client in CLIENTS)
            rows.append(f"| {server} | {label} | {_in(unit, a)} | {_in(unit, b)} | {a / b:.2f}× |")
    return "\n".join(rows)


def eras(samples: Samples) -> str:
    """Which era each client spoke to each server, from its first round."""
    return "; ".join(f"{k} → {s}: {v[0]['era']}" for (k, s), v in samples.items())


class Figure(Protocol):
    @property
    def key(self) -> str: ...

    def fmt(self, value: float) -> str: ...


F = TypeVar("F", bound=Figure)


def figure_table(
    results: dict[str, dict[str, list[float]]],
    names: list[str],
    figures: Sequence[F],
    label: Callable[[F], str],
    note: Callable[[str, F, float], str],
) -> str:
    """One row per figure (``label``), one column per server in ``names``: the median of its
    samples, formatted, then ``note(server, figure, median)``; ``–`` where it has none."""
    lines = ["| figure (median) | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for fig in figures:
        cells = []
        for name in names:
            samples = results[name].get(fig.key)
            if not samples:
                cells.append("–")
                continue
            v = median(samples)
            cells.append(fig.fmt(v) + note(name, fig, v))
        lines.append(f"| {label(fig)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(report: str, out: str) -> None:
    """Print ``report`` and write it to the file ``out``."""
    print()
    print(report)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(report + "\n")
    print(f"\nwritten: {out}")
