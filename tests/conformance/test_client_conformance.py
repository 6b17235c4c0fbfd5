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


MACHINE_AUTH = {
    "auth/client-credentials-basic": {"client-credentials-basic-auth"},
    "auth/client-credentials-jwt": {"client-credentials-jwt-verified"},
    "auth/enterprise-managed-authorization": {
        "complete-flow-token-exchange",
        "complete-flow-jwt-bearer",
    },
    "auth/wif-jwt-bearer": {"wif-assertion-verified"},
    "auth/dpop": {
        "sep-1932-client-token-request-proof",
        "sep-1932-client-dpop-auth-scheme",
        "sep-1932-client-fresh-proof",
    },
    "auth/dpop-nonce": {
        "sep-1932-client-token-request-proof",
        "sep-1932-client-dpop-auth-scheme",
        "sep-1932-client-fresh-proof",
        "sep-1932-client-as-nonce",
        "sep-1932-client-rs-nonce",
    },
}
"""The extension scenarios of the OAuth grants and DPoP, with the checks that prove each."""


@pytest.mark.timeout(900)
def test_every_scenario_of_the_whole_client_suite_passes() -> None:
    """``conformance client --suite all``: every scenario the suite ships, extensions
    (client credentials, enterprise-managed authorization, workload identity, DPoP)
    included, passes or is skipped by the suite itself; none fails."""
    run = harness.run_client(COMMAND, suite="all")
    final = {r.scenario: r for r in run.results}
    for name, result in list(final.items()):
        for _ in range(2 if result.status == harness.FAIL else 0):
            [result] = harness.run_client(COMMAND, scenario=name).results
            final[name] = result
            if result.status != harness.FAIL:
                print(f"{name} passed when run alone")
                break
    failing = {n: r.details for n, r in final.items() if r.status == harness.FAIL}
    assert not failing, failing
    for name, wanted in MACHINE_AUTH.items():
        result = final[name]
        passed = {c.id for c in result.checks if c.status == "SUCCESS"}
        assert result.status == harness.PASS and wanted <= passed, (name, result.details)
