"""The MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``) as an external client of
examples/servers/everything.py: tools/list, tools/call, resources/read and prompts/get, once with
a config pinning the modern era (2026-07-28) and once pinning the legacy handshake.

The Inspector is installed by this test into ``<repo>/.cache/inspector`` (pinned version);
if node/npm or the install is unavailable the test fails — it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conformance import provision
from ..provisioning import fingerprint, locked
from .util import EXAMPLES, HERE, REPO

INSPECTOR_VERSION = "2.12.0"
PREFIX = REPO / ".cache" / "inspector"
BIN = PREFIX / "node_modules" / ".bin" / "mcp-inspector"
LOCK_FILE = REPO / ".cache" / ".inspector-install.lock"
PACKAGE_JSON = PREFIX / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"


def ensure_inspector() -> Path:
    """Install the pinned Inspector into the repo's cache once; fail loudly if impossible.

    Tests run in parallel (pytest-xdist): an exclusive lock on a file beside the install
    makes a second worker wait for the first one's install and then find it done."""
    with locked(LOCK_FILE):
        return _install_inspector()


def _install_inspector() -> Path:
    """The pinned Inspector, installed (npm retried on network errors) and fingerprinted."""
    package = "@modelcontextprotocol/inspector"
    if provision.is_current(PREFIX, package, INSPECTOR_VERSION, BIN):
        return BIN
    unmarked = not (PREFIX / provision.MARKER).exists()
    if unmarked and _version() == INSPECTOR_VERSION and BIN.is_file():
        # installed before markers were written: vouch for it from now on
        provision.write_marker(PREFIX, package, INSPECTOR_VERSION, artefact=fingerprint(BIN))
        return BIN
    assert shutil.which("node"), "node and npm are needed for the Inspector interop test"
    provision.npm_install(PREFIX, f"{package}@{INSPECTOR_VERSION}")
    assert BIN.is_file(), f"{BIN} missing after install"
    assert _version() == INSPECTOR_VERSION, f"{PACKAGE_JSON} is not {INSPECTOR_VERSION}"
    provision.write_marker(PREFIX, package, INSPECTOR_VERSION, artefact=fingerprint(BIN))
    return BIN


def _version() -> str | None:
    try:
        version = json.loads(PACKAGE_JSON.read_text()).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def inspect(config: Path, home: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory", "NO_COLOR": "1"}
    cmd = [
        "node",
        str(ensure_inspector()),
        "--cli",
        "--config",
        str(config),
        "--server",
        "everything",
        "--format",
        "json",
        "--quiet",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=home)
    assert proc.returncode == 0, (
        f"{args}: exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr[-3000:]}"
    )
    out: dict[str, Any] = json.loads(proc.stdout)
    result: dict[str, Any] = out.get("result", out)
    return result


@pytest.mark.timeout(600)  # installs the Inspector on a first run, then eight node processes
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_inspector_cli_against_everything(era: str, tmp_path: Path) -> None:
    log = tmp_path / "client-to-server.jsonl"
    config = tmp_path / f"{era}.json"
    server = {
        "command": sys.executable,
        "args": [
            str(HERE / "tap.py"),
            str(log),
            sys.executable,
            str(EXAMPLES / "servers" / "everything.py"),
        ],
        "protocolEra": era,
    }
    config.write_text(json.dumps({"mcpServers": {"everything": server}}))

    tools = inspect(config, tmp_path, "--method", "tools/list")
    names = [t["name"] for t in tools["tools"]]
    assert "test_simple_text" in names and "sleep" in names

    called = inspect(config, tmp_path, "--method", "tools/call", "--tool-name", "test_simple_text")
    assert called["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}
    ]

    read = inspect(
        config, tmp_path, "--method", "resources/read", "--uri", "test://template/42/data"
    )
    assert json.loads(read["contents"][0]["text"])["id"] == "42"

    prompt = inspect(
        config,
        tmp_path,
        "--method",
        "prompts/get",
        "--prompt-name",
        "test_prompt_with_arguments",
        "--prompt-args",
        "arg1=a",
        "arg2=b",
    )
    assert prompt["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='a', arg2='b'"

    # What the Inspector actually sent proves which era it spoke.
    sent = [json.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
    requests = [m for m in sent if "id" in m and "method" in m]
    methods = {m["method"] for m in requests}
    assert {"tools/list", "tools/call", "resources/read", "prompts/get"} <= methods
    versions = {
        (m.get("params") or {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
        for m in requests
        if m["method"] != "initialize"
    }
    if era == "modern":
        assert "initialize" not in methods
        assert versions == {"2026-07-28"}, versions
    else:
        inits = [m for m in requests if m["method"] == "initialize"]
        assert inits and all(m["params"]["protocolVersion"] < "2026" for m in inits)
        assert versions == {None}, versions  # no per-request modern _meta in a legacy session
