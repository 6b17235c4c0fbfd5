"""Output on stdout before the first reply (a print() at import time) is named as such."""

from __future__ import annotations

import sys

from mcpline.check.runner import ServerProcess

from .util import HERE, MCPLINE, run_check, statuses

SERVER = HERE / "print_at_import_server.py"
HINT = "print() at import time or before server.run()"


def test_print_at_import_fails_purity_with_the_hint() -> None:
    code, report = run_check(
        "--only", "framing", "--exit-timeout", "3", server=[sys.executable, str(SERVER)]
    )
    assert code == 1
    pure = next(c for c in report["checks"] if c["id"] == "framing.stdout-pure")
    assert pure["status"] == "FAIL"
    assert "loading the echo server..." in pure["seen"]
    assert HINT in pure["seen"] and "mcpline run FILE" in pure["seen"]


def test_the_same_file_under_mcpline_run_is_pure() -> None:
    code, report = run_check(
        "--only", "framing", "--exit-timeout", "3", server=[*MCPLINE, "run", str(SERVER)]
    )
    assert statuses(report)["framing.stdout-pure"] == "PASS", report["checks"]
    assert code == 0


def _stats_after_one_exchange(script: str) -> tuple[int, int]:
    """(impure lines, impure lines before the first message) of a tiny stdlib server."""
    p = ServerProcess([sys.executable, "-c", script], label="tiny", validate=False)
    try:
        assert p.request("server/discover", timeout=20) is not None
    finally:
        p.stop()
    return p.stats.problem_counts.get("impure", 0), p.stats.impure_before_first_message


REPLY = (
    "import json, sys\n"
    "{before}"
    "req = json.loads(sys.stdin.readline())\n"
    "print(json.dumps({{'jsonrpc': '2.0', 'id': req['id'], 'result': {{}}}}), flush=True)\n"
    "{after}"
    "sys.stdin.read()\n"
)


def test_only_output_before_the_first_message_counts_as_start_up_output() -> None:
    early = REPLY.format(before="print('banner', flush=True)\n", after="")
    late = REPLY.format(before="", after="print('late', flush=True)\n")
    assert _stats_after_one_exchange(early) == (1, 1)
    assert _stats_after_one_exchange(late) == (1, 0)
