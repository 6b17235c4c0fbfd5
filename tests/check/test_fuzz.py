"""Fuzzing and soak of mcpline's own server and client (short CI runs; the full 100,000-line
fuzz and 1,000,000-request soak are documented commands in docs/check.md)."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from mcpline.check.corpus import Corpus, Fuzzer, readable_id
from mcpline.check.fuzz import fuzz_server, soak_server
from mcpline.check.runner import ServerProcess, tree_rss

from .util import EXAMPLES, HERE

EVERYTHING = [sys.executable, str(EXAMPLES / "servers" / "everything.py")]


def test_readable_id_definition() -> None:
    ok = b'{"jsonrpc":"2.0","id":%s,"method":"m"}'
    assert readable_id(ok % b"7") == 7
    assert readable_id(ok % b'"7"') == "7"
    assert readable_id(ok % b"9007199254740991") == 2**53 - 1
    for bad_id in (b"9007199254740992", b"1.0", b"true", b"null", b"[1]", b'"\\ud800"'):
        assert readable_id(ok % bad_id) is readable_id(b"x"), bad_id  # MISSING
    missing = readable_id(b"x")
    assert (
        readable_id(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}') is missing
    )  # duplicate names
    assert readable_id(b'{"jsonrpc":"1.0","id":1,"method":"m"}') is missing
    assert readable_id(b'{"jsonrpc":"2.0","id":1,"method":5}') is missing
    assert readable_id(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}') is missing
    assert readable_id(b'{"jsonrpc":"2.0","id":1,"method":"m","x":"\xff"}') is missing  # not UTF-8
    deep = b"[" * 70 + b"]" * 70
    assert readable_id(b'{"jsonrpc":"2.0","id":1,"method":"m","params":%s}' % deep) is missing
    big = b'{"jsonrpc":"2.0","id":1,"method":"m","p":"%s"}' % (b"x" * (1 << 20))
    assert readable_id(big) is missing  # over 1 MiB


def test_fuzz_lines_are_reproducible_from_the_seed() -> None:
    corpus = Corpus(
        [("server/discover", {}), ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})]
    )
    a = list(Fuzzer(corpus, 5).lines(300))
    b = list(Fuzzer(corpus, 5).lines(300))
    c = list(Fuzzer(corpus, 6).lines(300))
    assert a == b and a != c
    assert len([1 for _, fuzz in a if fuzz]) == 300
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line, _ in a)


def _everything_corpus(seed: int) -> Corpus:
    p = ServerProcess(EVERYTHING, label="corpus")
    try:
        tools = p.request("tools/list", timeout=20)["result"]["tools"]  # type: ignore[index]
        caps = p.request("server/discover", timeout=10)["result"]["capabilities"]  # type: ignore[index]
    finally:
        p.stop()
    return Corpus.from_server(tools, caps, exclude_tools={"sleep"}, seed=seed)


def test_fuzz_everything_server_short_run() -> None:
    seed = int(os.environ.get("MCPLINE_FUZZ_SEED", "20260728"))
    fuzzer = Fuzzer(_everything_corpus(seed), seed)
    rep, _ = fuzz_server(EVERYTHING, fuzzer, 3000, timeout=20)
    assert not rep.crashed and not rep.hung, rep.stderr_tail
    assert rep.impure == 0 and rep.schema_problems == 0, rep.problem_examples
    assert rep.lost == [] and rep.duplicated == []
    assert rep.fuzz_lines == 3000 and rep.readable > 1000
    assert rep.answered_once == rep.readable - rep.optional_unanswered


@pytest.mark.timeout(600)  # 20,000 requests: about 50 s quiet, several times that loaded
def test_soak_everything_server_memory_flat() -> None:
    corpus = _everything_corpus(1)
    # Two malloc arenas: glibc gives each new worker thread an arena of its own (up to 8 per
    # core), and a busy machine, where calls overlap more, starts more threads, whose arenas
    # then read as growth. The soak measures what the server keeps, not how many arenas.
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    rep = soak_server(EVERYTHING, corpus, 20_000, samples=40, timeout=30, env=env)
    assert not rep.crashed and not rep.hung
    assert rep.answered == rep.requests == 20_000 and rep.problems == 0
    assert rep.growth is not None and rep.growth < 0.05, (rep.baseline, rep.final, rep.samples)


def test_client_fed_fuzzed_server_output_survives() -> None:
    from mcpline import Client
    from mcpline.client import ClientError

    async def main() -> tuple[dict[str, int], list[int]]:
        outcomes: dict[str, int] = {}
        rss: list[int] = []
        client = Client.stdio(
            sys.executable,
            [str(HERE / "fuzz_output_server.py")],
            env={"FUZZ_SEED": "11"},
            era="modern",
            timeout=1.0,
            max_timeout=2.0,
            max_line_bytes=1 << 20,
            max_restarts=1000,
            restart_backoff=0.01,
            max_backoff=0.05,
        )
        async with client:
            for i in range(400):
                method = ("tools/list", "tools/call", "server/discover")[i % 3]
                params = {"name": "echo", "arguments": {}} if method == "tools/call" else {}
                try:
                    # A hang would trip this outer bound; the client's own timeout is 1 s.
                    await asyncio.wait_for(client.request(method, params), 10)
                    kind = "ok"
                except ClientError as exc:
                    kind = type(exc).__name__
                outcomes[kind] = outcomes.get(kind, 0) + 1
                if i % 50 == 49:
                    rss.append(tree_rss(os.getpid()) or 0)
        return outcomes, rss

    t0 = time.monotonic()
    outcomes, rss = asyncio.run(main())
    assert sum(outcomes.values()) == 400
    assert outcomes.get("ok", 0) > 100, outcomes  # it keeps working through the garbage
    assert time.monotonic() - t0 < 120
    # Memory bounded: after warm-up, less than 20 MiB more (oversized lines are up to 2 MiB).
    assert max(rss[2:]) - rss[1] < 20 * 1024 * 1024, rss
