"""``scripts/flakes.py`` reads pytest's JUnit report and says which tests failed, and why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="scripts/flakes.py is POSIX only")

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.cli.test_cli" name="test_ok" time="0.1"/>
<testcase classname="tests.cli.test_cli" name="test_late[x]" time="5.4">
  <failure message="AssertionError: took 5.4 s&#10;assert 5.4 &lt; 5.0">long text</failure>
</testcase>
<testcase classname="tests.conformance.test_server" name="test_setup" time="1">
  <error message="">HarnessError: fetch failed&#10;more</error>
</testcase>
</testsuite></testsuites>
"""


def test_failures_and_their_first_line(tmp_path: Path) -> None:
    from scripts import flakes

    junit = tmp_path / "run-1.xml"
    junit.write_text(REPORT, "utf-8")
    assert flakes.failures(junit) == {
        "tests/cli/test_cli.py::test_late[x]": "AssertionError: took 5.4 s",
        "tests/conformance/test_server.py::test_setup": "HarnessError: fetch failed",
    }
    assert flakes.failures(tmp_path / "missing.xml") == {}


def test_report_lists_each_failure_with_its_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scripts import flakes

    runs = [
        flakes.RunResult(1, 300.0, 0, {}, (1.0, 20.0)),
        flakes.RunResult(2, 310.0, 1, {"tests/a.py::t": "assert 1 == 2"}, (9.0, 28.0)),
    ]
    assert flakes.report(runs, tmp_path) == 1
    out = capsys.readouterr().out
    assert "1/2  tests/a.py::t" in out and "run 2: assert 1 == 2" in out
    assert flakes.report(runs[:1], tmp_path) == 0
    broken = [flakes.RunResult(1, 9.0, 4, {}, (0.0, 1.0))]
    assert flakes.report(broken, tmp_path) == 2
