"""Seeded fuzzing and soak of a stdio server.

`fuzz_server` sends a `Fuzzer`'s lines interleaved with valid requests and accounts for every
reply against the readable ids (defined in `mcpline.check.corpus`); `soak_server` sends valid
requests only and samples the server's RSS.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from ..jsonrpc import MISSING, request
from ..protocol.meta import modern_meta
from ..spec import MODERN
from ..wire import encode
from .corpus import Corpus, Fuzzer, cancelled_id, id_tokens, parse_strict, readable_id
from .runner import CLIENT_INFO, ServerProcess, idkey

WINDOW = 64
"""Requests kept outstanding at most."""


@dataclass
class FuzzReport:
    lines_sent: int = 0
    fuzz_lines: int = 0
    valid_requests: int = 0
    readable: int = 0
    answered_once: int = 0
    lost: list[Any] = field(default_factory=list)
    duplicated: list[Any] = field(default_factory=list)
    optional_unanswered: int = 0
    anonymous_errors: int = 0
    replies: int = 0
    crashed: bool = False
    exit_status: int | None = None
    hung: bool = False
    impure: int = 0
    schema_problems: int = 0
    problem_examples: list[str] = field(default_factory=list)
    rss_start: int | None = None
    rss_end: int | None = None
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    stderr_tail: str = ""

    @property
    def rss_growth(self) -> float | None:
        if not self.rss_start or not self.rss_end:
            return None
        return (self.rss_end - self.rss_start) / self.rss_start


class _Accounting:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, Any], int] = {}
        self.anon = 0
        self.replies = 0

    def __call__(self, msg: dict[str, Any]) -> None:
        if "method" in msg or ("result" not in msg and "error" not in msg):
            return
        self.replies += 1
        rid = msg.get("id")
        if rid is None:
            self.anon += 1
            return
        key = idkey(rid)
        self.counts[key] = self.counts.get(key, 0) + 1


def fuzz_server(
    argv: list[str],
    fuzzer: Fuzzer,
    n: int,
    *,
    timeout: float = 10.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    process: ServerProcess | None = None,
) -> tuple[FuzzReport, ServerProcess]:
    """Send ``n`` fuzzed lines (plus interleaved valid requests) and account for every reply."""
    acct = _Accounting()
    p = process or ServerProcess(argv, label="fuzz", env=env, cwd=cwd, record=False, sink=acct)
    if process is not None:
        p.sink, p.record = acct, False
    rep = FuzzReport()
    readable: dict[tuple[str, Any], Any] = {}
    optional: set[tuple[str, Any]] = set()
    ambiguous: dict[tuple[str, Any], int] = {}
    seen_ids: set[tuple[str, Any]] = set()
    outstanding: list[tuple[str, Any]] = []
    t0 = time.monotonic()
    warm = max(1, n // 10)

    def settled() -> bool:
        while outstanding and (acct.counts.get(outstanding[0], 0) or outstanding[0] in optional):
            outstanding.pop(0)
        return len(outstanding) < WINDOW

    for line, is_fuzz in fuzzer.lines(n):
        if not p.alive:
            break
        rid = readable_id(line[:-1])
        for _ in range(100):
            if rid is MISSING or idkey(rid) not in seen_ids:
                break
            # A mutation reproduced an id already used (a duplicate): draw another line.
            line = fuzzer.fuzzed() if is_fuzz else encode(fuzzer.valid())
            rid = readable_id(line[:-1])
        tokens = id_tokens(line)
        if rid is not MISSING:
            key = idkey(rid)
            if key in seen_ids:
                continue
            seen_ids.update(tokens)
            seen_ids.add(key)
            readable[key] = rid
            outstanding.append(key)
            obj = parse_strict(line[:-1])
            p.note_request(obj)
        else:
            seen_ids.update(tokens)
            # A broken line carrying a readable request's id may draw an error with that id.
            for t in tokens:
                if t in readable:
                    ambiguous[t] = ambiguous.get(t, 0) + 1
            cid = cancelled_id(line[:-1])
            if cid is not MISSING and (type(cid) in (str, int)):
                optional.add(idkey(cid))
        if not p.send_raw(line):
            break
        rep.lines_sent += 1
        if is_fuzz:
            rep.fuzz_lines += 1
            if rep.fuzz_lines == warm:
                rep.rss_start = p.rss_bytes()
        else:
            rep.valid_requests += 1
        if not p.wait_until(settled, timeout):
            rep.hung = True
            break
    # One last valid request: if it comes back, the server is still serving.
    final = fuzzer.valid()
    final["id"] = "fuzz-final"
    readable[idkey("fuzz-final")] = "fuzz-final"
    p.send(final)
    got_final = p.wait_until(lambda: acct.counts.get(idkey("fuzz-final"), 0) > 0, timeout)
    p.wait_until(
        lambda: all(acct.counts.get(k, 0) or k in optional for k in readable),
        timeout if got_final else 0.1,
    )
    if not got_final and p.alive:
        rep.hung = True
    time.sleep(0.2)
    rep.rss_end = p.rss_bytes()
    rep.seconds = time.monotonic() - t0
    crashed_before_close = not p.alive
    code = p.stop()
    rep.crashed = crashed_before_close
    rep.exit_status = code
    rep.readable = len(readable)
    for key, rid in readable.items():
        c = acct.counts.get(key, 0)
        if c == 1 or 1 < c <= 1 + ambiguous.get(key, 0):
            rep.answered_once += 1
        elif c == 0 and key in optional:
            rep.optional_unanswered += 1
        elif c == 0:
            rep.lost.append(rid)
        else:
            rep.duplicated.append(rid)
    rep.anonymous_errors = acct.anon
    rep.replies = acct.replies
    rep.impure = p.stats.problem_counts.get("impure", 0) + p.stats.problem_counts.get("crlf", 0)
    rep.schema_problems = p.stats.problem_counts.get("schema", 0) + p.stats.problem_counts.get(
        "request", 0
    )
    rep.problem_examples = [f"{x.kind}: {x.detail}: {x.excerpt}" for x in p.stats.problems[:5]]
    rep.kinds = dict(fuzzer.kinds)
    rep.stderr_tail = p.stderr_text[-2000:] if rep.crashed else ""
    return rep, p


@dataclass
class SoakReport:
    requests: int = 0
    answered: int = 0
    seconds: float = 0.0
    samples: list[tuple[int, int]] = field(default_factory=list)
    """(requests sent, RSS bytes) pairs."""
    baseline: int | None = None
    final: int | None = None
    peak: int | None = None
    hung: bool = False
    crashed: bool = False
    problems: int = 0

    @property
    def growth(self) -> float | None:
        if not self.baseline or not self.final:
            return None
        return (self.final - self.baseline) / self.baseline


def soak_server(
    argv: list[str],
    corpus: Corpus,
    n: int,
    *,
    timeout: float = 10.0,
    samples: int = 50,
    warmup: float = 0.1,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    seed: int = 0,
) -> SoakReport:
    """``n`` valid requests, pipelined ``WINDOW`` deep; RSS sampled ``samples`` times.

    Growth is measured from the end of the warm-up (the median of three samples there) to
    the end (the median of the last three samples).
    """
    answered = [0]
    unexpected = [0]
    outstanding: set[Any] = set()

    def sink(msg: dict[str, Any]) -> None:
        if "method" in msg:
            return
        rid = msg.get("id")
        if rid in outstanding:
            outstanding.discard(rid)
            answered[0] += 1
        else:
            unexpected[0] += 1

    p = ServerProcess(argv, label="soak", env=env, cwd=cwd, record=False, sink=sink)
    rep = SoakReport()
    rng = random.Random(seed)
    prepared = [(m, json.loads(json.dumps(params))) for m, params in corpus.requests]
    every = max(1, n // samples)
    t0 = time.monotonic()
    meta = modern_meta(MODERN, {}, CLIENT_INFO)
    try:
        for i in range(n):
            method, params = prepared[rng.randrange(len(prepared))]
            msg = request(i, method, {**params, "_meta": meta})
            with p.cond:
                outstanding.add(i)
            if not p.send_raw(encode(msg)):
                rep.crashed = True
                break
            rep.requests += 1
            if len(outstanding) >= WINDOW and not p.wait_until(
                lambda: len(outstanding) < WINDOW, timeout
            ):
                rep.hung = True
                break
            if i % every == every - 1:
                p.wait_until(lambda: not outstanding, timeout)
                rss = p.rss_bytes()
                if rss is not None:
                    rep.samples.append((i + 1, rss))
        if not p.wait_until(lambda: not outstanding, timeout):
            rep.hung = True
    finally:
        rep.seconds = time.monotonic() - t0
        rep.crashed = rep.crashed or not p.alive
        p.stop()
    rep.answered = answered[0]
    rep.problems = sum(p.stats.problem_counts.values()) + unexpected[0]
    if len(rep.samples) >= 6:
        values = [v for _, v in rep.samples]
        k = max(1, int(len(values) * warmup))
        rep.baseline = int(statistics.median(values[k : k + 3]))
        rep.final = int(statistics.median(values[-3:]))
        rep.peak = max(values[k:])
    return rep
