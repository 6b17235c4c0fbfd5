"""mcpline's HTTP client under the official conformance suite's client scenarios.

``conformance client --requirements R`` runs ``examples/conformance_client.py`` against one
test server per scenario, all scenarios at once. Every scenario the revision scores must
pass; one that fails in the parallel run is run again alone (at most twice) before it
counts as failed, since timing-sensitive scenarios (``sse-retry`` measures a 500 ms
reconnection) miss their windows when some forty clients start together on two cores.
Nothing here skips: a suite that cannot be installed or run fails these tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import harness

REPO = Path(__file__).resolve().parents[2]
COMMAND = f"{sys.executable} {REPO / 'examples' / 'conformance_client.py'}"
REQUIRED = {"2026-07-28": 32, "2025-11-25": 18}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("revision", sorted(REQUIRED))
def test_every_required_client_scenario_passes(revision: str) -> None:
    run = harness.run_client(COMMAND, requirements=revision)
    scored = [r for r in run.results if r.scored]
    assert len(scored) == REQUIRED[revision], harness.markdown_table(run.results)
    alone = harness.rerun_alone(COMMAND, run, revision)
    final = {r.scenario: alone.get(r.scenario, r) for r in scored}
    failing = {
        name: r.details for name, r in final.items() if r.status == harness.FAIL or not r.checks
    }
    assert not failing, failing
    if alone:
        print(f"passed when run alone: {sorted(alone)}")


def test_a_single_client_scenario_is_parsed() -> None:
    run = harness.run_client(COMMAND, scenario="tools_call", spec_version="2026-07-28")
    [result] = run.results
    assert result.scenario == "tools_call" and result.status == harness.PASS, result.details
    assert {"tool-add-numbers", "wire-schema-valid"} <= {c.id for c in result.checks}
