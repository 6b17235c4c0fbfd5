"""What an import loads, in a fresh interpreter: the client never loads the server (nor its
transports), and ``import mcpline`` loads the server only when a server name is used."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def fresh(code: str) -> Any:
    """Run ``code`` in a new interpreter; it prints one JSON value, returned here."""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


LOADED = "print(json.dumps(sorted(m for m in sys.modules if m.startswith('mcpline'))))"


def test_the_client_loads_no_server_module() -> None:
    loaded = fresh(
        "import json, sys\n"
        "import mcpline.client, mcpline.client.socket, mcpline.client.process\n"
        "mcpline.client.Client.stdio('server')\n"
        "mcpline.client.Client.connect('unix:/nowhere.sock')\n" + LOADED
    )
    assert "mcpline.client.client" in loaded
    assert not [m for m in loaded if m.startswith(("mcpline.server", "mcpline.transports"))]


def test_the_client_reads_no_package_metadata_at_import() -> None:
    assert not fresh(
        "import json, sys\nimport mcpline.client\n"
        "print(json.dumps('importlib.metadata' in sys.modules))"
    )


def test_import_mcpline_loads_the_server_on_first_use() -> None:
    before, after, names = fresh(
        "import json, sys\n"
        "import mcpline\n"
        "before = sorted(m for m in sys.modules if m.startswith('mcpline.server'))\n"
        "from mcpline import Context, Server, ToolResult, elicit, text\n"
        "after = 'mcpline.server.server' in sys.modules\n"
        "names = [Server.__module__, Context.__name__, ToolResult.__name__, elicit.__name__,"
        " text.__name__]\n"
        "print(json.dumps([before, after, names]))"
    )
    assert before == [] and after
    assert names == ["mcpline.server.server", "Context", "ToolResult", "elicit", "text"]


def test_every_top_level_name_resolves_and_the_errors_are_exported() -> None:
    missing, same, version = fresh(
        "import json\n"
        "import mcpline, mcpline.errors as e\n"
        "missing = [n for n in mcpline.__all__ if getattr(mcpline, n, None) is None]\n"
        "names = ['Error', 'ClientError', 'ServerError', 'ConnectionLost', 'RequestTimeout',"
        " 'ProtocolError', 'ClientClosed', 'InputDeclined', 'VersionMismatch']\n"
        "same = all(getattr(mcpline, n) is getattr(e, n) and n in mcpline.__all__"
        " for n in names)\n"
        "print(json.dumps([missing, same, mcpline.__version__]))"
    )
    assert missing == [] and same
    from importlib.metadata import version as installed

    assert version == installed("mcpline")  # the metadata is built from the one string


def test_a_stdio_client_loads_no_http_library() -> None:
    heavy = fresh(
        "import json, sys\n"
        "import mcpline, mcpline.client\n"
        "from mcpline.client import Client\n"
        "Client.stdio('server')\n"
        "Client.http('http://127.0.0.1:1/mcp')\n"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('httpx2', 'httpx', 'httpcore2', 'authlib', 'anyio'))))"
    )
    assert heavy == []


SERVING = """
import sys
from mcpline import Server

server = Server("loaded")


@server.tool
def echo(text: str) -> str:
    '''Echo.'''
    return text


@server.tool
def loaded() -> list[str]:
    '''The modules loaded so far.'''
    return sorted(sys.modules)


server.run()
"""

NOT_WHILE_SERVING = (
    "json",  # stdlib json: the wire is msgspec's
    "hashlib",  # digests come with the first sealed state or authenticated caller
    "mcpline.server.auth.tokens",  # only a server that authenticates reads tokens
    "mcpline.server.legacy",  # the legacy era is built on the first ``initialize``
    "mcpline.server.tasks",
    "mcpline.server.subscriptions",
    "mcpline.server.resources",
    "mcpline.server.prompts",
    "mcpline.server.completion",
    "mcpline.transports.http",
    "mcpline.cli",
    "mcpline.client",
    "rich",
    "uvicorn",
    "pydantic",
    "jsonschema",
    "mcpline._platform._procfs",  # process figures: measured only when asked
    "mcpline._platform._psutil",
)


def test_a_stdio_server_serving_discover_and_a_call_loads_only_what_they_need() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": meta},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "loaded", "arguments": {}, "_meta": meta},
        },
    ]
    run = subprocess.run(
        [sys.executable, "-c", SERVING],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    replies = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3] and "result" in replies[1], replies
    loaded = set(replies[2]["result"]["structuredContent"]["result"])
    assert "mcpline.server.engine" in loaded  # it did serve
    unwanted = sorted(
        m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_WHILE_SERVING)
    )
    assert unwanted == []
