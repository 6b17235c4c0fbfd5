"""The official conformance suite through ``mcpline bridge --http``: in front of
``examples/servers/everything.py`` every required scenario of both requirement sets passes, as
it does against mcpline's own HTTP server (37 for 2026-07-28, 30 for 2025-11-25), and so do
the pending 2026-07-28 HTTP scenarios. npm's legacy-only ``server-everything`` runs through
the bridge too; its results are written to ``.cache/bridge-conformance.md``, not judged."""

from __future__ import annotations

import pytest

from ..conformance import harness
from ..conformance.compare import PENDING_2026, required
from . import compare

pytestmark = pytest.mark.timeout(1200)


def failing(results: list[harness.ScenarioResult]) -> list[str]:
    return [f"{r.scenario}: {r.status} ({r.details})" for r in results if r.status != harness.PASS]


def test_the_conformance_suite_through_the_bridge() -> None:
    """One test, so that parallel workers do not each run the suite (a minute or two)."""
    runs = compare.collect()
    out = compare.REPO / ".cache" / "bridge-conformance.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(compare.render(runs), "utf-8")

    for revision, count in (("2026-07-28", 37), ("2025-11-25", 30)):
        run = runs["everything.py"][f"{revision} requirements"]
        scored = required(run)
        assert len(scored) == count, (revision, [r.scenario for r in scored])
        assert not failing(scored), "\n".join(failing(scored))
        assert run.exit_ok, run.stdout[-3000:]
        if run.rerun:
            print(f"passed when run again alone ({revision}): {sorted(run.rerun)}")

    by = runs["everything.py"]["2026-07-28 pending suite"].by_scenario()
    wanted = [by[name] for name in PENDING_2026 if name in by]
    assert [r.scenario for r in wanted] == list(PENDING_2026), list(by)
    assert not failing(wanted), "\n".join(failing(wanted))

    # server-everything is recorded, not judged; but the scenarios that need no fixture of
    # the suite's own pass: the bridge's translation and its HTTP binding are what they test.
    for title, run in runs["server-everything"].items():
        assert run.results, title
    modern = runs["server-everything"]["2026-07-28 requirements"].by_scenario()
    legacy = runs["server-everything"]["2025-11-25 requirements"].by_scenario()
    for name in ("tools-list", "resources-list", "prompts-list", "dns-rebinding-protection"):
        assert modern[name].status == harness.PASS, modern[name]
    for name in ("server-initialize", "tools-list", "ping", "logging-set-level"):
        assert legacy[name].status == harness.PASS, legacy[name]
    text = out.read_text("utf-8")
    assert "| 2026-07-28 requirements: required scenarios passing | 37/37 |" in text
    assert "| 2025-11-25 requirements: required scenarios passing | 30/30 |" in text
