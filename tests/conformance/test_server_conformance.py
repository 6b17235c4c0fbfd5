"""The official conformance suite against ``mcpline run examples/servers/everything.py --http``.

Every required scenario of both requirement sets must pass (37 for 2026-07-28, 30 for
2025-11-25), and so must the pending 2026-07-28 scenarios ``json-schema-2020-12``,
``http-header-validation`` and ``http-custom-header-server-validation``, and the tasks
extension's nine ``tasks-*`` scenarios the suite runs (it skips ``tasks-status-notifications``
itself). The SDK fixture runs
in the same session; the side-by-side table is written to ``.cache/conformance.md``
(``docs/conformance.md`` is a committed copy of a real run). Nothing here skips. A scored
scenario that fails is run again alone (`harness.rerun_server_alone`: the runner reads some
event streams within fixed windows of its own, under a second, that a loaded machine can
miss); its cell in the table and the test's output say so, and a real failure fails again.

The tests share one run of it per session, across xdist's workers (``tests.shared``): the
first to start (``tests/schedule.py`` puts one first and the rest last) runs the suite.
"""

from __future__ import annotations

import pytest

from ..shared import once
from . import compare, harness

pytestmark = pytest.mark.timeout(1200)


def _collect() -> dict[str, dict[str, harness.ServerRun]]:
    found = compare.collect()
    out = compare.REPO / ".cache" / "conformance.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(compare.render(found), "utf-8")
    return found


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, harness.ServerRun]]:
    return once(tmp_path_factory, "server-conformance", _collect)


def failing(results: list[harness.ScenarioResult]) -> list[str]:
    return [f"{r.scenario}: {r.status} ({r.details})" for r in results if r.status != harness.PASS]


@pytest.mark.parametrize(("revision", "count"), [("2026-07-28", 37), ("2025-11-25", 30)])
def test_every_required_scenario_passes(
    runs: dict[str, dict[str, harness.ServerRun]], revision: str, count: int
) -> None:
    run = runs["mcpline"][f"{revision} requirements"]
    scored = compare.required(run)
    assert len(scored) == count, [r.scenario for r in scored]
    assert not failing(scored), "\n".join(failing(scored))
    assert run.exit_ok, run.stdout[-3000:]
    if run.rerun:
        print(f"passed when run again alone: {sorted(run.rerun)}")


def test_the_pending_2026_http_scenarios_pass(
    runs: dict[str, dict[str, harness.ServerRun]],
) -> None:
    by = runs["mcpline"]["2026-07-28 pending suite"].by_scenario()
    wanted = [by[name] for name in compare.PENDING_2026 if name in by]
    assert [r.scenario for r in wanted] == list(compare.PENDING_2026), list(by)
    assert not failing(wanted), "\n".join(failing(wanted))
    in_requirements = runs["mcpline"]["2026-07-28 requirements"].by_scenario()
    assert not failing([in_requirements[name] for name in compare.PENDING_2026])


def test_the_tasks_extension_scenarios_pass(
    runs: dict[str, dict[str, harness.ServerRun]],
) -> None:
    by = runs["mcpline"]["2026-07-28 requirements"].by_scenario()
    assert [name for name in compare.TASKS if name not in by] == [], list(by)
    ran = compare.tasks(runs["mcpline"])
    assert len(ran) == len(compare.TASKS) - len(compare.TASKS_SKIPPED)
    assert not failing(ran), "\n".join(failing(ran))
    for name in compare.TASKS_SKIPPED:
        assert by[name].status == harness.SKIP, by[name]


def test_the_sdk_fixture_ran_beside_it(runs: dict[str, dict[str, harness.ServerRun]]) -> None:
    for title, run in runs["sdk"].items():
        assert run.results, title
    text = (compare.REPO / ".cache" / "conformance.md").read_text("utf-8")
    assert "| 2026-07-28 requirements: required scenarios passing | 37/37 |" in text
    assert "| 2025-11-25 requirements: required scenarios passing | 30/30 |" in text
