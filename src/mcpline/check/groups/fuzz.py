"""fuzz and soak: seeded malformed input and sustained valid load, each on a process of its
own, from one corpus of valid traffic built from what the server offers."""

from __future__ import annotations

from ...spec import DISCOVER
from ..corpus import Corpus, Fuzzer
from ..fuzz import fuzz_server, soak_server
from ..model import FAIL, PASS, SKIP, WARN, CheckContext
from ..runner import memory_unavailable


def corpus(ctx: CheckContext) -> Corpus:
    """The valid traffic both groups start from, built once, from a process of its own."""
    if ctx.corpus is not None:
        return ctx.corpus
    p = ctx.spawn("corpus")
    try:
        p.request(DISCOVER, timeout=ctx.options.startup_timeout)
        prompts = ctx.list_all(p, "prompts") if "prompts" in ctx.capabilities else None
        resources = ctx.list_all(p, "resources") if "resources" in ctx.capabilities else None
    finally:
        p.stop()
    exclude = {ctx.slow.name} if ctx.slow else set()
    ctx.corpus = Corpus.from_server(
        ctx.tools,
        ctx.capabilities,
        prompts=prompts,
        resources=resources,
        exclude_tools=exclude,
        seed=ctx.options.seed,
    )
    return ctx.corpus


def _mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1048576:.1f} MiB"


def run_fuzz(ctx: CheckContext) -> None:
    """Send ``--fuzz`` lines (nothing to do when it is 0)."""
    n, seed = ctx.options.fuzz, ctx.options.seed
    if n <= 0:
        return
    fuzzer = Fuzzer(corpus(ctx), seed)
    p = ctx.spawn("fuzz", record=False)
    rep, _ = fuzz_server(ctx.argv, fuzzer, n, timeout=max(ctx.options.timeout, 5.0), process=p)
    ctx.facts["fuzz"] = {
        "seed": seed,
        "lines": rep.lines_sent,
        "fuzz_lines": rep.fuzz_lines,
        "valid_requests": rep.valid_requests,
        "readable_ids": rep.readable,
        "answered_once": rep.answered_once,
        "lost": len(rep.lost),
        "duplicated": len(rep.duplicated),
        "anonymous_errors": rep.anonymous_errors,
        "seconds": round(rep.seconds, 1),
        "rss_start": rep.rss_start,
        "rss_end": rep.rss_end,
        "kinds": rep.kinds,
    }
    tag = (
        f"seed {seed}, {rep.fuzz_lines} fuzzed + {rep.valid_requests} valid lines in "
        f"{rep.seconds:.1f} s"
    )
    ctx.add(
        "fuzz.no-crash",
        FAIL if rep.crashed else PASS,
        (
            "the server survives any input: malformed lines are answered or ignored, never fatal "
            "(spec: basic/index#error-responses; JSON-RPC 2.0: error_object)"
        ),
        f"{tag}: exited with status {rep.exit_status} mid-run; stderr: {rep.stderr_tail[-300:]!r}"
        if rep.crashed
        else f"{tag}: still running at the end",
    )
    ctx.add(
        "fuzz.no-hang",
        FAIL if rep.hung else PASS,
        "every request is answered; the reader keeps reading after bad input (spec: "
        "basic/index#responses)",
        "requests stopped being answered"
        if rep.hung
        else "a valid request after the fuzz was answered",
    )
    ctx.add(
        "fuzz.stdout-pure",
        FAIL if rep.impure or rep.schema_problems else PASS,
        (
            "S·MUST NOT write anything but valid MCP messages to stdout, whatever the input "
            "(spec: basic/transports/stdio)"
        ),
        (
            f"{rep.impure} impure and {rep.schema_problems} schema-invalid lines: "
            f"{rep.problem_examples[:2]}"
        )
        if rep.impure or rep.schema_problems
        else f"{rep.replies} replies, all pure and schema-valid",
    )
    bad = rep.lost or rep.duplicated
    ctx.add(
        "fuzz.readable-ids-answered-once",
        FAIL if bad else PASS,
        (
            "S·MUST answer each request exactly once with its id; 'readable id' as defined in "
            "docs/check.md (spec: basic/index#responses)"
        ),
        (
            f"{rep.readable} readable ids: {len(rep.lost)} never answered {rep.lost[:5]}, "
            f"{len(rep.duplicated)} answered twice {rep.duplicated[:5]}"
        )
        if bad
        else (
            f"{rep.readable} readable ids each answered exactly once ({rep.optional_unanswered} "
            f"cancelled by a fuzzed notification); {rep.anonymous_errors} id-less errors"
        ),
    )
    growth = rep.rss_growth
    unmeasured = memory_unavailable() if growth is None else None
    ctx.add(
        "fuzz.memory",
        SKIP if unmeasured else WARN if growth is not None and growth > 0.25 else PASS,
        "mcpline rec: bounded memory whatever the peer sends (refines spec: "
        "basic/transports/stdio)",
        f"RSS {_mib(rep.rss_start)} after warm-up → {_mib(rep.rss_end)} at the end ({growth:+.1%})"
        if growth is not None
        else f"RSS {unmeasured}"
        if unmeasured
        else "RSS not available (/proc)",
    )


def run_soak(ctx: CheckContext) -> None:
    """Send ``--soak`` valid requests (nothing to do when it is 0)."""
    n, o = ctx.options.soak, ctx.options
    if n <= 0:
        return
    rep = soak_server(
        ctx.argv,
        corpus(ctx),
        n,
        timeout=max(o.timeout, 10.0),
        env=o.env,
        cwd=o.cwd,
        seed=o.seed,
    )
    growth = rep.growth
    ctx.facts["soak"] = {
        "requests": rep.requests,
        "answered": rep.answered,
        "seconds": round(rep.seconds, 1),
        "rss_baseline": rep.baseline,
        "rss_final": rep.final,
        "rss_peak": rep.peak,
        "growth": None if growth is None else round(growth, 4),
    }
    ok = (
        not rep.hung and not rep.crashed and rep.answered == rep.requests == n and rep.problems == 0
    )
    rate = rep.requests / rep.seconds if rep.seconds else 0
    ctx.add(
        "soak.all-answered",
        PASS if ok else FAIL,
        "S·MUST answer every request exactly once; pure stdout (spec: basic/index#responses, "
        "basic/transports/stdio)",
        (
            f"{rep.answered}/{n} answered in {rep.seconds:.1f} s ({rate:.0f} req/s); "
            f"{rep.problems} problems; hung={rep.hung} crashed={rep.crashed}"
        ),
    )
    unmeasured = memory_unavailable() if growth is None else None
    ctx.add(
        "soak.memory",
        (PASS if growth < 0.05 else WARN) if growth is not None else SKIP if unmeasured else WARN,
        "mcpline rec: memory stays flat under sustained load (growth after warm-up under 5 %) "
        "(refines spec: basic/transports/stdio)",
        (
            f"RSS {_mib(rep.baseline)} after warm-up → {_mib(rep.final)} at the end "
            f"({growth:+.2%}), peak {_mib(rep.peak)}"
        )
        if growth is not None
        else f"RSS {unmeasured}"
        if unmeasured
        else "too few RSS samples",
    )
