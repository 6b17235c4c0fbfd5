"""HTTP side by side: mcpline on uvicorn (1 and 2 workers) vs the Streamable HTTP servers of
the official `mcp` 2.3.0 SDK and of FastMCP 4.1.6 and vs a bare ASGI app (the floor), the same
echo/sleep server, driven by wrk.

    .venv/bin/python bench/http_server.py            # 3 interleaved rounds (about 10 minutes)
    .venv/bin/python bench/http_server.py --quick    # one short round, to check that it works

Each server is the file of `bench/servers/` served over HTTP on 127.0.0.1: ``mcpline run
mcpline_server.py --http`` (and ``--workers 2``), ``mcp_http_server.py`` and
``fastmcp_http_server.py`` (the stdio servers' own objects, run as their READMEs show), and
the floor, ``asgi_floor_server.py``: an ASGI app that only reads the body, decodes it and
returns the echo result, on uvicorn with mcpline's options. All of them run on the same
uvicorn, which picks the same event loop and HTTP parser for each.
Every request is a 2026-07-28 ``tools/call`` POST with its ``_meta`` and mirrored headers, on
keep-alive connections, each client sending its next request when the previous reply has come
(wrk, `bench/loadgen.py`; every reply must be a 200 with the expected text).

Figures, per server, median over rounds (servers interleaved, the order rotating each round;
a fresh server process per round): requests/s and p50/p99 latency of ``echo`` (a plain
``def``) at 1, 16 and 128 concurrent clients; server CPU per request (user + system time of
the server's processes, workers included, from /proc); ``aecho`` (``async def``) at 16;
128 concurrent ``sleep(100 ms)``; RSS per idle ``subscriptions/listen`` stream (N listens
opened on a fresh server, RSS growth ÷ N); and wrk's own CPU, to show it was not the
bottleneck. Each figure is printed with its ratio to mcp 2.3.0's and to the floor's, and
mcpline's against the floor round by round. Written to bench/results/http.md and http.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import figure_table, machine, median, ratio  # noqa: E402
from loadgen import Wrk, WrkResult, run_wrk, wrk_binary  # noqa: E402

MIB = 1 << 20
CLK_TCK = os.sysconf("SC_CLK_TCK")
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpline-bench-http", "version": "1"},
}
ACCEPT = "application/json, text/event-stream"
REF = "mcp 2.3.0"
FLOOR = "floor"
STATE_KEY = "a-bench-only-state-key-shared-by-the-workers"
LEVELS = (1, 16, 128)


class BenchError(RuntimeError):
    """A server misbehaved: it did not start, or a reply was not what it should be."""


# --- the servers' processes -------------------------------------------------------------------


def process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it (uvicorn's workers, say)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` (every thread), from /proc/<pid>/stat.

    The one place that reads CPU time: mcpline._platform, once it exists, can take over here.
    """
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / CLK_TCK


def rss_bytes(pids: list[int]) -> int:
    """The sum of VmRSS of ``pids``."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Spec:
    """How to start one HTTP server under test (``{port}`` in ``argv`` is filled in)."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    processes: int = 1
    """Processes that serve (the uvicorn supervisor of several workers is not one)."""


PER_CLIENT_CAPS = ["--max-listens-per-client", "10000", "--max-requests-per-client", "10000"]
"""mcpline's per-client caps for the bench (see `servers`)."""


def servers(selected: list[str] | None) -> list[Spec]:
    mcpline = str(Path(sys.executable).parent / "mcpline")
    file = str(HERE / "servers" / "mcpline_server.py")
    # Every load here comes from one client (127.0.0.1): the per-client caps, security
    # defaults of 32 listens and 128 requests, are raised so that the listen figure opens
    # its streams and the figures measure serving, not the caps.
    bind = ["127.0.0.1:{port}", *PER_CLIENT_CAPS]
    specs = [
        Spec(FLOOR, [sys.executable, str(HERE / "servers" / "asgi_floor_server.py"), "{port}"]),
        Spec("mcpline", [mcpline, "run", file, "--http", *bind]),
        Spec(
            "mcpline, 2 workers",
            [mcpline, "run", file, "--http", *bind, "--workers", "2"],
            {"MCPLINE_STATE_KEY": STATE_KEY},
            processes=2,
        ),
        Spec(REF, [sys.executable, str(HERE / "servers" / "mcp_http_server.py"), "{port}"]),
        Spec(
            "FastMCP 4.1.6",
            [sys.executable, str(HERE / "servers" / "fastmcp_http_server.py"), "{port}"],
        ),
    ]
    if selected:
        specs = [s for s in specs if s.name in selected]
    return specs


def body(tool: str, arguments: dict[str, Any], id: int = 1) -> bytes:
    params = {"name": tool, "arguments": arguments, "_meta": META}
    message = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


def headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        out["Mcp-Name"] = name
    return out


def raw_post(port: int, data: bytes, hdrs: dict[str, str]) -> bytes:
    """The request line and head of one POST to ``/mcp``, ``data`` as its body."""
    head = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(data)}"]
    head += [f"{k}: {v}" for k, v in hdrs.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def exchange(port: int, data: bytes, hdrs: dict[str, str], until: bytes, timeout: float) -> bytes:
    """Send one POST on a new connection; what came back once ``until`` is in it (or the
    connection closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw_post(port, data, hdrs))
        got = b""
        while until not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


class Running:
    """One server process (tree) on a free port; stopped with SIGTERM, then killed."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.port = free_port()
        argv = [a.replace("{port}", str(self.port)) for a in spec.argv]
        env = {**os.environ, **spec.env}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=env,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        data, hdrs = body("echo", {"text": "ready?"}), headers("tools/call", "echo")
        deadline = time.monotonic() + timeout
        while True:
            try:
                if b"ready?" in exchange(self.port, data, hdrs, b"ready?", 5):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"{self.spec.name} did not start:\n{self.log()}")
            time.sleep(0.1)
        if self.spec.processes > 1:  # every worker answers once it is up
            deadline = time.monotonic() + timeout
            while len(self.serving()) < self.spec.processes:
                if time.monotonic() > deadline:
                    raise BenchError(f"{self.spec.name}: workers missing:\n{self.log()}")
                time.sleep(0.1)

    def log(self) -> str:
        self._log.seek(0)
        text: bytes = self._log.read()
        return text.decode(errors="replace")[-3000:]

    def pids(self) -> list[int]:
        return process_tree(self.proc.pid)

    def serving(self) -> list[int]:
        """The processes that serve: uvicorn's spawned workers under a supervisor, else the
        process itself."""
        if self.spec.processes == 1:
            return [self.proc.pid]
        workers = []
        for pid in self.pids()[1:]:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"spawn_main" in f.read():
                        workers.append(pid)
            except OSError:
                continue
        return workers

    def cpu(self) -> float:
        return cpu_seconds(self.pids())

    def rss(self) -> int:
        return rss_bytes(self.pids())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()


# --- one server's figures -----------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    key: str
    tool: str
    arguments: dict[str, Any]
    expect: str
    connections: int


LOADS = [
    *(Load(f"echo{c}", "echo", {"text": "hello"}, '"hello"', c) for c in LEVELS),
    Load("aecho16", "aecho", {"text": "hello"}, '"hello"', 16),
    Load("sleep128", "sleep", {"ms": 100}, "slept 100 ms", 128),
]


def drive(wrk: Wrk, run: Running, load: Load, seconds: float) -> tuple[WrkResult, float]:
    """One wrk run; (its result, server CPU seconds per request)."""
    cpu0 = run.cpu()
    result = run_wrk(
        wrk,
        run.url,
        body(load.tool, load.arguments),
        headers("tools/call", load.tool),
        load.expect,
        connections=load.connections,
        seconds=seconds,
    )
    cpu = run.cpu() - cpu0
    if result.bad or not result.requests:
        raise BenchError(
            f"{run.spec.name} {load.key}: {result.bad} of {result.requests} replies were not "
            f"a 200 with {load.expect}:\n{run.log()}"
        )
    return result, cpu / result.requests


def listen_rss(run: Running, count: int) -> float | None:
    """RSS growth per idle listen stream, ``count`` of them open at once; None when the
    server has no ``subscriptions/listen``."""
    params = {"notifications": {"toolsListChanged": True}, "_meta": META}
    hdrs = headers("subscriptions/listen")
    time.sleep(0.3)
    before = run.rss()
    socks: list[socket.socket] = []
    try:
        for i in range(count):
            message = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "subscriptions/listen",
                "params": params,
            }
            data = json.dumps(message, separators=(",", ":")).encode()
            s = socket.create_connection(("127.0.0.1", run.port), timeout=30)
            socks.append(s)
            s.sendall(raw_post(run.port, data, hdrs))
            got = b""
            while b"acknowledged" not in got:
                chunk = s.recv(65536)
                got += chunk
                if got.startswith(b"HTTP/1.1 404") or b"-32601" in got:
                    return None  # no subscriptions/listen
                if not chunk or (b"\r\n\r\n" in got and not got.startswith(b"HTTP/1.1 200")):
                    raise BenchError(f"{run.spec.name}: listen {i} was not acknowledged: {got!r}")
        time.sleep(0.5)
        return (run.rss() - before) / count
    finally:
        for s in socks:
            s.close()


def battery(wrk: Wrk, spec: Spec, args: argparse.Namespace) -> dict[str, float]:
    """Every figure of one server, on a fresh process."""
    out: dict[str, float] = {}
    run = Running(spec)
    try:
        for _ in range(50):  # untimed: lazy imports and first-call caches
            exchange(run.port, body("echo", {"text": "warm"}), headers("tools/call", "echo"),
                     b"warm", 10)  # fmt: skip
        out["rss_idle"] = float(run.rss())
        per_listen = listen_rss(run, args.listens)
        if per_listen is not None:
            out["rss_listen"] = per_listen
        drive(wrk, run, LOADS[1], min(1.0, args.seconds))  # untimed warm-up under load
        for load in LOADS:
            result, cpu = drive(wrk, run, load, args.seconds)
            out[f"{load.key}_rps"] = result.per_s
            out[f"{load.key}_p50"] = result.p50
            out[f"{load.key}_p99"] = result.p99
            out[f"{load.key}_cpu"] = cpu
            out[f"{load.key}_gen"] = result.generator_load
        return out
    finally:
        run.stop()


# --- the report ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    higher_is_better: bool

    def fmt(self, v: float) -> str:
        if self.unit == "/s":
            return f"{v:,.0f}/s"
        if self.unit == "ms":
            return f"{v * 1e3:.2f} ms" if v < 0.1 else f"{v * 1e3:.0f} ms"
        if self.unit == "µs":
            return f"{v * 1e6:,.0f} µs"
        if self.unit == "KiB":
            return f"{v / 1024:.1f} KiB"
        if self.unit == "MiB":
            return f"{v / MIB:.1f} MiB"
        if self.unit == "%":
            return f"{v:.0%}"
        return f"{v:g}"


FIGURES: list[Figure] = []
for _c in LEVELS:
    FIGURES += [
        Figure(
            f"echo{_c}_rps", f"echo, {_c} client{'s' if _c > 1 else ''}: requests/s", "/s", True
        ),
        Figure(f"echo{_c}_p50", f"echo, {_c}: p50 latency", "ms", False),
        Figure(f"echo{_c}_p99", f"echo, {_c}: p99 latency", "ms", False),
        Figure(f"echo{_c}_cpu", f"echo, {_c}: server CPU per request", "µs", False),
    ]
FIGURES += [
    Figure("aecho16_rps", "aecho (async def), 16 clients: requests/s", "/s", True),
    Figure("aecho16_cpu", "aecho, 16: server CPU per request", "µs", False),
    Figure("sleep128_rps", "128 × sleep(100 ms) at once: requests/s (ideal 1,280)", "/s", True),
    Figure("sleep128_p99", "sleep, 128: p99 latency (ideal 100 ms)", "ms", False),
    Figure("rss_idle", "RSS after start and 50 requests", "MiB", False),
    Figure("rss_listen", "RSS per idle listen stream", "KiB", False),
    Figure("echo16_gen", "wrk's CPU, echo at 16 (share of one core)", "%", False),
    Figure("echo128_gen", "wrk's CPU, echo at 128 (share of one core)", "%", False),
]
BY_KEY = {f.key: f for f in FIGURES}


NO_RATIO = ("_gen",)


def table(results: dict[str, dict[str, list[float]]], names: list[str]) -> str:
    def label(fig: Figure) -> str:
        arrow = "" if fig.key.endswith(NO_RATIO) else " ↑" if fig.higher_is_better else " ↓"
        return fig.label + arrow

    def note(name: str, fig: Figure, v: float) -> str:
        if fig.key.endswith(NO_RATIO):
            return ""
        extras = []
        for ref_name, short in ((REF, "mcp"), (FLOOR, "floor")):
            ref = results.get(ref_name, {}).get(fig.key)
            if name != ref_name and ref:
                extras.append(f"{ratio(v, median(ref))} {short}")
        return " (" + ", ".join(extras) + ")" if extras else ""

    return figure_table(results, names, FIGURES, label, note)


def spread_line(results: dict[str, dict[str, list[float]]], names: list[str]) -> str:
    """(max − min) ÷ median of the throughput figures, per server."""
    parts = []
    for name in names:
        spreads = []
        for c in LEVELS:
            s = results[name].get(f"echo{c}_rps", [])
            if len(s) > 1:
                spreads.append(f"{(max(s) - min(s)) / median(s):.0%}")
        if spreads:
            parts.append(f"{name}: {' / '.join(spreads)}")
    return "; ".join(parts)


def paired(
    results: dict[str, dict[str, list[float]]], key: str, name: str, ref_name: str = REF
) -> list[float]:
    """``name``'s figure ÷ ``ref_name``'s, round by round (the two ran minutes apart at
    most, under the same load): steadier than a ratio of medians on a busy machine."""
    ours, ref = results[name].get(key, []), results[ref_name].get(key, [])
    return [a / b for a, b in zip(ours, ref, strict=False) if b]


FLOOR_GOALS: list[tuple[str, str, Callable[[float], bool]]] = [
    ("echo16_rps", "echo at 16 clients, requests/s ≥ 0.5× the floor's", lambda r: r >= 0.5),
    ("aecho16_rps", "aecho at 16 clients, requests/s ≥ 0.7× the floor's", lambda r: r >= 0.7),
    ("echo16_cpu", "server CPU per echo request ≤ 2× the floor's", lambda r: r <= 2),
    ("aecho16_cpu", "server CPU per aecho request ≤ 1.5× the floor's", lambda r: r <= 1.5),
]


def floor_targets(results: dict[str, dict[str, list[float]]]) -> str:
    """mcpline (one worker) against the floor: the goals of issue 25, round by round."""
    if "mcpline" not in results or FLOOR not in results:
        return ""
    lines = ["## Targets (mcpline, one worker, vs the floor)", ""]
    for key, label, ok in FLOOR_GOALS:
        rounds = paired(results, key, "mcpline", FLOOR)
        if not rounds:
            continue
        each = ", ".join(f"{x:.2f}×" for x in rounds)
        r = median(rounds)
        lines.append(
            f"- [{'met' if ok(r) else 'MISSED'}] {label}: {r:.2f}× (median of the rounds' "
            f"ratios; round by round {each})"
        )
    return "\n".join(lines)


def targets(results: dict[str, dict[str, list[float]]]) -> str:
    med = {n: {k: median(v) for k, v in f.items()} for n, f in results.items()}
    ours, ref = med.get("mcpline"), med.get(REF)
    if ours is None or ref is None:
        return ""
    lines = ["## Targets (mcpline, one worker, vs mcp 2.3.0)", ""]
    goals: list[tuple[str, str, Callable[[float], bool]]] = [
        ("echo16_rps", "echo throughput at 16 clients ≥ 5× the mcp SDK's", lambda r: r >= 5),
        ("echo16_cpu", "server CPU per request at 16 clients ≤ 0.2× the SDK's", lambda r: r <= 0.2),
    ]
    for key, label, ok in goals:
        r = ours[key] / ref[key]
        rounds = paired(results, key, "mcpline")
        each = ", ".join(f"{x:.2f}×" for x in rounds)
        lines.append(
            f"- [{'met' if ok(r) else 'MISSED'}] {label}: {r:.2f}× (ratio of the medians); "
            f"round by round {each}, median {median(rounds):.2f}×"
        )
    capacity = ref["echo16_cpu"] / ours["echo16_cpu"]
    lines.append(
        f"- requests one core can serve (1 ÷ CPU per request) at 16 clients: {capacity:.1f}× "
        "the SDK's: what the throughput ratio tends to when each server has a core to itself"
    )
    two = med.get("mcpline, 2 workers")
    if two is not None:
        scale = " / ".join(f"{two[f'echo{c}_rps'] / ours[f'echo{c}_rps']:.2f}×" for c in LEVELS)
        lines.append(f"- 2 workers ÷ 1 worker, echo requests/s at 1 / 16 / 128 clients: {scale}")
    return "\n".join(lines)


def render(meta: dict[str, Any], results: dict[str, dict[str, list[float]]]) -> str:
    """The report of one run (``meta`` as saved in the JSON file)."""
    names = list(results)
    started = dt.datetime.fromisoformat(meta["started"])
    load_before, load_after = meta["load"]
    gen_max = max(v for figs in results.values() for k, vs in figs.items() if k.endswith("_gen")
                  for v in vs)  # fmt: skip
    args = meta["args"]
    header = (
        f"Run {started:%Y-%m-%d %H:%M} UTC on {meta['machine']}; {meta['stack']} for every "
        f"server; wrk {meta['wrk']}, one thread.\n"
        f"{args['rounds']} interleaved rounds of {args['seconds']:g} s per figure, medians; "
        f"(ratios) = value ÷ {REF}'s and ÷ the floor's (↑ higher is better, ↓ lower is better). "
        f"Load average {load_before[0]:.2f} before, {load_after[0]:.2f} after. "
        f"Spread of echo requests/s over the rounds ((max − min) ÷ median, at 1 / 16 / 128): "
        f"{spread_line(results, names) or 'one round'}. "
        f"The load generator never used more than {gen_max:.0%} of one core."
    )
    parts = [header, table(results, names), NOTES, targets(results), floor_targets(results)]
    return "\n\n".join(p for p in parts if p)


def stack() -> str:
    """Which uvicorn, event loop and HTTP parser every server here runs on."""
    import importlib.util

    import uvicorn

    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"uvicorn {uvicorn.__version__} ({loop}, {parser})"


NOTES = """Reading the table:

- The floor is a bare ASGI app (`bench/servers/asgi_floor_server.py`) on the same uvicorn
  with mcpline's options: it reads the body, decodes the JSON and returns the echo result,
  with no validation and no thread (its `echo` and `aecho` are the same), and has no listen.
- Every server runs in one process except "mcpline, 2 workers": two uvicorn workers on one
  socket, uvicorn's supervisor and multiprocessing's resource tracker; its CPU and RSS are
  the sum of all four (the two idle helpers hold about 40% of that RSS).
- Every load comes from one client address, so mcpline runs with its per-client caps
  raised (`--max-listens-per-client` and `--max-requests-per-client`, whose defaults of 32
  and 128 would refuse the listen figure's streams with 429).
- Server CPU per request is the servers' user + system time over the run divided by the
  requests answered: it does not depend on how busy the rest of the machine was, unlike
  requests/s and latency (2 cores shared with wrk, and with other work on this machine).
- One client is one keep-alive connection that sends its next request when the previous
  reply has come (wrk closed loop): at 1 client, requests/s is 1 ÷ the round trip.
- `echo` is a plain `def`: mcpline runs it on the event loop once it has shown itself short
  (docs/tools.md), the other libraries on a worker thread; `aecho` is `async def`.
- FastMCP 4.1.6 answers `subscriptions/listen` with -32601 (method not found): no listen
  figure. The listen streams are opened on a fresh server, one after the other, and each
  counted once its acknowledgement has arrived."""


def write(meta: dict[str, Any], results: dict[str, dict[str, list[float]]], out: Path) -> None:
    """Print the report; write it to ``out``.md and the samples to ``out``.json."""
    report = render(meta, results)
    print()
    print(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("# HTTP benchmark results\n\n" + report + "\n")
    out.with_suffix(".json").write_text(json.dumps({**meta, "samples": results}, indent=1) + "\n")
    print(f"\nwritten: {out.with_suffix('.md')}, {out.with_suffix('.json')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--seconds", type=int, default=5, help="each wrk run, whole s (default 5)")
    ap.add_argument("--listens", type=int, default=500, help="listen streams opened (500)")
    ap.add_argument("--servers", help="comma-separated subset, e.g. 'mcpline,mcp 2.3.0'")
    ap.add_argument("--quick", action="store_true", help="one short round")
    ap.add_argument("--out", default=str(HERE / "results" / "http"), help="results path stem")
    ap.add_argument("--render", metavar="JSON", help="only rewrite the report of a saved run")
    args = ap.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        write(saved, saved.pop("samples"), Path(args.out))
        return 0
    if args.quick:
        args.rounds, args.seconds, args.listens = 1, 2, 100

    wrk = wrk_binary()
    specs = servers(args.servers.split(",") if args.servers else None)
    names = [s.name for s in specs]
    started = dt.datetime.now(dt.timezone.utc)
    load_before = os.getloadavg()
    print(f"servers: {', '.join(names)}; {args.rounds} round(s); wrk {wrk.version}", flush=True)
    results: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    for rnd in range(args.rounds):
        order = specs[rnd % len(specs) :] + specs[: rnd % len(specs)]
        for spec in order:
            figs = battery(wrk, spec, args)
            for key, value in figs.items():
                results[spec.name].setdefault(key, []).append(value)
            print(
                f"  round {rnd + 1}/{args.rounds} {spec.name:>18}: "
                + ", ".join(f"{c}: {figs[f'echo{c}_rps']:,.0f}/s" for c in LEVELS)
                + f"; {figs['echo16_cpu'] * 1e6:,.0f} µs CPU/request at 16"
                + f"; wrk {max(figs[k] for k in figs if k.endswith('_gen')):.0%} of a core",
                flush=True,
            )
    meta = {
        "started": started.isoformat(),
        "machine": machine(),
        "stack": stack(),
        "wrk": wrk.version,
        "args": vars(args),
        "load": [load_before, os.getloadavg()],
    }
    write(meta, results, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
