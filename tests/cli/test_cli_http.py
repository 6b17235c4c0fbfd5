"""The command line against HTTP servers: ``--server http://…``, ``--header``, ``mcpServers``
entries with a ``url`` and ``headers``, ``${VAR}`` expansion, and no secret in ``--verbose``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ..client.http_fakes import Request, discover_result, fake_server, respond_json, result
from ..client.util import run
from ..interop.http_servers import serve
from ..proc import FIXTURES

MCPLINE = str(Path(sys.executable).with_name("mcpline"))
SECRET = "Bearer TOPSECRET-4c1d"


async def mcpline(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        MCPLINE,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def tools_server(req: Request, w: asyncio.StreamWriter) -> None:
    msg = req.json()
    if msg["method"] == "server/discover":
        respond_json(w, discover_result(msg["id"]))
    else:
        tools = [{"name": "t", "inputSchema": {"type": "object"}}]
        respond_json(w, result(msg["id"], {"tools": tools, "ttlMs": 0, "cacheScope": "private"}))


def test_server_url_and_headers_and_nothing_secret_in_verbose_output() -> None:
    async def main() -> None:
        async with fake_server(tools_server) as srv:
            code, out, err = await mcpline(
                "tools",
                "--server",
                srv.url + "/mcp?key=QUERYSECRET",
                "--header",
                f"Authorization: {SECRET}",
                "--header",
                "X-Tenant: acme",
                "--verbose",
            )
            assert code == 0, err
            assert [t["name"] for t in json.loads(out)["tools"]] == ["t"]
            assert all(r.headers["authorization"] == SECRET for r in srv.requests)
            assert all(r.headers["x-tenant"] == "acme" for r in srv.requests)
            assert "→ " in err and "tools/list" in err  # the wire trace is there...
            assert "TOPSECRET" not in err and "QUERYSECRET" not in err  # ...the keys are not

    run(main())


def test_a_config_entry_with_a_url_headers_and_variables(tmp_path: Path) -> None:
    async def main() -> None:
        async with fake_server(tools_server) as srv:
            config = tmp_path / "mcp.json"
            config.write_text(
                json.dumps(
                    {
                        "mcpServers": {
                            "web": {
                                "type": "http",
                                "url": "${WEB_BASE}/mcp",
                                "headers": {
                                    "Authorization": "Bearer ${WEB_TOKEN}",
                                    "X-Region": "${WEB_REGION:-eu-west}",
                                },
                            },
                            "bare": {"url": srv.url + "/mcp"},
                            "broken": {"url": "${NOT_SET_ANYWHERE_HOPEFULLY}/mcp"},
                        }
                    }
                )
            )
            env = {"WEB_BASE": srv.url, "WEB_TOKEN": "t0k"}
            code, out, err = await mcpline(
                "tools", "--config", str(config), "--name", "web", env=env
            )
            assert code == 0, err
            assert srv.requests[-1].headers["authorization"] == "Bearer t0k"
            assert srv.requests[-1].headers["x-region"] == "eu-west"
            code, out, err = await mcpline("tools", "--config", str(config), "--name", "bare")
            assert code == 0, err
            code, out, err = await mcpline("tools", "--config", str(config), "--name", "broken")
            assert code == 2
            assert "${NOT_SET_ANYWHERE_HOPEFULLY}, which is not set" in err

    run(main())


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--server", "unix:/nowhere.sock", "--header", "A: b"], "--header needs an http(s)"),
        (["--server", "http://127.0.0.1:9/mcp", "--header", "no colon"], "'Name: value'"),
        (["--server", "http://127.0.0.1:9/mcp", "--timeout", "5"], "nothing is listening"),
    ],
)
def test_bad_http_arguments_are_one_line_errors(args: list[str], why: str) -> None:
    code, out, err = run(mcpline("tools", *args))
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err


def test_call_against_the_official_sdk_over_http() -> None:
    with serve([sys.executable, str(FIXTURES / "http_peer.py"), "mcp"]) as url:
        for era in ("auto", "legacy"):
            code, out, err = run(
                mcpline(
                    "call", "add", "--args", '{"a": 20, "b": 22}', "--server", url, "--era", era
                )
            )
            assert code == 0, err
            got: Any = json.loads(out)
            assert got["structuredContent"] == {"result": 42}
