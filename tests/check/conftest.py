"""A ``mcpline check`` run of the everything server that the tests reading its report share:
one run per test session, not one per test (xdist's workers share it through a file)."""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from ..shared import once
from .util import EXAMPLES, run_check

EVERYTHING = [sys.executable, str(EXAMPLES / "servers" / "everything.py")]


def _run() -> dict[str, Any]:
    code, report = run_check("--exit-timeout", "3", server=EVERYTHING)
    return {"code": code, "report": report}


@pytest.fixture(scope="session")
def _everything_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return once(tmp_path_factory, "everything-check", _run)


@pytest.fixture
def everything_check(_everything_run: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(exit status, report) of ``mcpline check --json --exit-timeout 3`` against
    examples/servers/everything.py; each test gets its own copy of the report."""
    return _everything_run["code"], copy.deepcopy(_everything_run["report"])
