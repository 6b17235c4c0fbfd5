"""Long tests first, so that parallel workers (pytest-xdist) do not end on them.

The suite runs on a few workers (``-n`` in pyproject's addopts) that are handed tests one or
two at a time (``--maxschedchunk 1``) in collection order. A 30-second test that came last
would leave the other workers idle for its whole length; started first, it runs beside
hundreds of short ones. The list below holds the slowest tests of a measured run (``pytest
--durations``), slowest first; ids are matched as prefixes, so one entry covers every
parametrization. A test missing from it, or an entry that no longer matches, only changes
the order. Sequential runs are unaffected but for that order.
"""

from __future__ import annotations

import pytest

SLOW_FIRST = (
    # Measured: whole runs (`pytest --durations=80`, 4-6 workers, 2 cores, quiet to load 13),
    # slowest first; a shared run (tests/shared.py) counts with the test listed here.
    # 100 s: the conformance suite through the bridge (everything.py, server-everything)
    "tests/bridge/test_bridge_conformance.py::test_the_conformance_suite_through_the_bridge",
    # 30-60 s: the soak (mostly waiting on slow tools), the conformance suite's client leg
    # and its server leg (everything.py and the SDK fixture), `mcpline check` of the peers
    "tests/check/test_fuzz.py::test_soak_everything_server_memory_flat",
    "tests/conformance/test_client_conformance.py::test_every_required_client_scenario_passes",
    "tests/conformance/test_server_conformance.py::test_every_required_scenario_passes[2026",
    "tests/check/test_check_peers.py::test_peer_runs_to_completion_and_reports_honestly",
    # 15-30 s
    "tests/check/test_check_catches.py::test_broken_server_is_caught_on_concurrency",
    "tests/typing/test_types.py::test_decorated_functions_keep_their_types",
    "tests/server/test_backpressure.py::test_listen_flood_to_a_peer_that_stops_reading",
    "tests/bridge/test_bridge_stdio.py::test_mcpline_check_passes_every_check_through_the",
    "tests/conformance/test_client_conformance.py::test_every_scenario_of_the_whole_client_suite",
    "tests/conformance/test_harness.py::test_a_failing_scenario_is_reported_as_failed",
    "tests/conformance/test_client_conformance.py::test_a_single_client_scenario_is_parsed",
    # 8-15 s: `mcpline check` against slow or broken servers (timeouts by design), and more
    "tests/cli/test_cli_input.py::test_input_answers_each_kind_in_order",
    "tests/examples/test_demo_package.py::test_a_wheel_ships_the_quickstart",
    "tests/bridge/test_bridge_faults.py::test_a_server_flooding_its_stdout_does_not_flood",
    "tests/conformance/test_harness.py::test_a_legacy_scenario_runs_on_the_handshake_wire",
    "tests/check/test_fuzz.py::test_client_fed_fuzzed_server_output_survives",
    "tests/hostile/test_bridge.py::test_a_failing_server_tells_remote_clients_an_incident_id",
    "tests/check/test_fuzz.py::test_fuzz_everything_server_short_run",
    # (its `mcpline check` run is shared with test_citations, which then finds it done)
    "tests/check/test_check_cli.py::test_everything_passes_with_no_skips",
    "tests/cli/test_cli_http.py::test_call_against_the_official_sdk_over_http",
    "tests/cli/test_cli.py::test_config_file_selects_the_server",
    "tests/conformance/test_harness.py::test_a_modern_scenario_passes_and_is_parsed",
    "tests/bridge/test_bridge_faults.py::test_a_server_that_crashes_in_a_loop",
    "tests/check/test_inspector.py::test_inspector_cli_against_everything",  # + npm install
    "tests/cli/test_cli.py::test_resources_read_prompts_get",
    # 6-9 s
    "tests/check/test_check_catches.py::test_broken_server_is_caught_on_framing",
    "tests/server/test_bus_processes.py::test_a_change_on_one_process_reaches_the_listens",
    "tests/server/test_backpressure.py::test_listen_flood_over_a_socket_that_is_never_read",
    "tests/check/test_check_cli.py::test_quickstart_passes_every_check",
    "tests/cli/test_cli_input.py::test_time_spent_answering_is_not_counted_against_the_timeout",
    "tests/hostile/test_sockets.py::test_hogs_at_the_gate_leave_the_token_holder_served",
    "tests/server/test_bus_processes.py::test_a_redis_restart_is_survived",
    "tests/bridge/test_bridge_faults.py::test_a_legacy_session_whose_process_dies_ends",
    "tests/transports/test_http_scale_out.py::test_two_replicas_share_changes_and_states",
    "tests/bridge/test_bridge_cli.py::test_legacy_sessions_are_bounded_in_number_and_idle_time",
    "tests/server/test_concurrency.py::test_sync_tools_run_off_the_loop",
    "tests/cli/test_cli.py::test_timeout_is_an_overall_deadline",
)

LAST = (
    # They read a run that a test above started (tests/shared.py): last, they find it done
    # instead of waiting for it beside it on other workers.
    "tests/typing/test_types.py::test_misspelt_or_mistyped_options_are_type_errors",
    "tests/conformance/test_server_conformance.py::test_every_required_scenario_passes[2025",
    "tests/conformance/test_server_conformance.py::test_the_pending_2026_http_scenarios_pass",
    "tests/conformance/test_server_conformance.py::test_the_tasks_extension_scenarios_pass",
    "tests/conformance/test_server_conformance.py::test_the_sdk_fixture_ran_beside_it",
)


def _rank(nodeid: str) -> int:
    for i, prefix in enumerate(SLOW_FIRST):
        if nodeid.startswith(prefix):
            return i
    return len(SLOW_FIRST)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the known slow tests to the front, each followed by one other test, and the
    tests that read a shared run (``LAST``) to the end.

    xdist starts each worker with two consecutive tests: interleaved, every worker starts
    on a slow test (instead of the first worker getting the two slowest, one after the
    other). The other tests keep their order.
    """
    last = [i for i in items if i.nodeid.startswith(LAST)]
    ranked = sorted((i for i in items if _rank(i.nodeid) < len(SLOW_FIRST)), key=_ranked)
    rest = [
        i for i in items if _rank(i.nodeid) == len(SLOW_FIRST) and not i.nodeid.startswith(LAST)
    ]
    order: list[pytest.Item] = []
    for k, item in enumerate(ranked):
        order.append(item)
        order.extend(rest[k : k + 1])
    order.extend(rest[len(ranked) :])
    order.extend(last)
    assert len(order) == len(items)
    items[:] = order


def _ranked(item: pytest.Item) -> int:
    return _rank(item.nodeid)
