"""`mcpline check` loads no server module: it judges servers, it does not contain one."""

from __future__ import annotations

import json
import subprocess
import sys

CHECK_PATH = """
import argparse, json, sys
from mcpline.cli import check
parser = argparse.ArgumentParser()
check.register(parser.add_subparsers())
assert check.run(parser.parse_args(["check"])) == 2  # no server command: usage error
import mcpline.check, mcpline.check.corpus, mcpline.check.fuzz
print(json.dumps(sorted(m for m in sys.modules if m.startswith("mcpline.server"))))
"""
"""Registers and runs the ``check`` subcommand far enough to import everything it uses."""

WITHOUT_PACKAGE_INIT = """
import importlib.util, sys, types
spec = importlib.util.find_spec("mcpline")
stub = types.ModuleType("mcpline")
stub.__path__ = list(spec.submodule_search_locations)
stub.__version__ = "0"
sys.modules["mcpline"] = stub
"""
"""Stands in for ``mcpline/__init__.py``, so that only what the check modules import loads."""


def server_modules_loaded(script: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    loaded: list[str] = json.loads(proc.stdout)
    return loaded


def test_the_check_command_loads_no_server_module() -> None:
    assert server_modules_loaded(CHECK_PATH) == []


def test_the_check_modules_import_nothing_from_the_server() -> None:
    assert server_modules_loaded(WITHOUT_PACKAGE_INIT + CHECK_PATH) == []
