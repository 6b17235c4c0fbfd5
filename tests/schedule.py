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
    # ~60 s: the conformance suite through the bridge (everything.py, server-everything)
    "tests/bridge/test_bridge_conformance.py::test_the_conformance_suite_through_the_bridge",
    # ~30 s: a flood for 30 s while RSS is sampled
    "tests/server/test_backpressure.py::test_listen_flood_to_a_peer_that_stops_reading",
    # 10-25 s: `mcpline check` against slow or broken servers (timeouts by design)
    "tests/check/test_check_catches.py::test_broken_server_is_caught_on_concurrency",
    "tests/check/test_check_peers.py::test_peer_runs_to_completion_and_reports_honestly",
    "tests/check/test_inspector.py::test_inspector_cli_against_everything",  # + npm install
    "tests/check/test_fuzz.py::test_client_fed_fuzzed_server_output_survives",
    # (its `mcpline check` run is shared with test_citations, which then finds it done)
    "tests/check/test_check_cli.py::test_everything_passes_with_no_skips",
    "tests/bridge/test_bridge_stdio.py::test_mcpline_check_passes_every_check_through_the",
    "tests/bridge/test_bridge_faults.py::test_a_server_that_crashes_in_a_loop",
    # 3-8 s
    "tests/check/test_check_catches.py::test_broken_server_is_caught_on_framing",
    "tests/conformance/test_harness.py::test_provisioning_pins_node_22",  # + npm install
    "tests/server/test_backpressure.py::test_listen_flood_over_a_socket_that_is_never_read",
    "tests/check/test_fuzz.py::test_soak_everything_server_memory_flat",
    "tests/check/test_check_cli.py::test_quickstart_passes_every_check",
    "tests/client/test_flood.py::test_ending_calls_leave_no_traceback",
    "tests/check/test_check_cli.py::test_human_report_has_rules_and_a_summary_line",
    "tests/server/test_concurrency.py::test_cancelled_tool_is_never_answered",
    "tests/cli/test_cli.py::test_timeout_is_an_overall_deadline",
    "tests/transports/test_sockets.py::test_idle_connections_are_closed_but_not_a_pending",
    "tests/server/test_backpressure.py::test_progress_over_the_bound_is_dropped",
    "tests/examples/test_demo_package.py::test_a_wheel_ships_the_quickstart",
    "tests/check/test_fuzz.py::test_fuzz_everything_server_short_run",
    # ~2 s
    "tests/client/test_hardening.py::test_oversized_late_answer_fails_nothing_else",
    "tests/transports/test_sockets.py::test_the_client_finds_the_token_in_the_file",
    "tests/client/test_process.py::test_servers_do_not_outlive_a_killed_host",
    "tests/server/test_mrtr.py::test_expired_state",
    "tests/transports/test_sockets.py::test_bad_socket_paths_are_one_line_errors",
    "tests/server/test_concurrency.py::test_sync_tools_run_off_the_loop",
    "tests/client/test_hardening.py::test_listen_survives_occasional_crashes",
    "tests/client/test_deadlines.py::test_each_request_times_out_at_its_own_deadline",
    "tests/client/test_hardening.py::test_oversized_answer_fails_just_its_request",
    "tests/typing/test_types.py::test_decorated_functions_keep_their_types",
)


def _rank(nodeid: str) -> int:
    for i, prefix in enumerate(SLOW_FIRST):
        if nodeid.startswith(prefix):
            return i
    return len(SLOW_FIRST)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the known slow tests to the front, each followed by one other test.

    xdist starts each worker with two consecutive tests: interleaved, every worker starts
    on a slow test (instead of the first worker getting the two slowest, one after the
    other). The other tests keep their order.
    """
    ranked = sorted((i for i in items if _rank(i.nodeid) < len(SLOW_FIRST)), key=_ranked)
    rest = [i for i in items if _rank(i.nodeid) == len(SLOW_FIRST)]
    order: list[pytest.Item] = []
    for k, item in enumerate(ranked):
        order.append(item)
        order.extend(rest[k : k + 1])
    order.extend(rest[len(ranked) :])
    assert len(order) == len(items)
    items[:] = order


def _ranked(item: pytest.Item) -> int:
    return _rank(item.nodeid)
