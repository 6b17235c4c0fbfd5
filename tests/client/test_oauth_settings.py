"""The grants from settings: `oauth_settings` (what a config file's ``auth`` object and the
CLI's ``--auth KEY=VALUE`` become), and the ``mcpline`` command line driving each grant
against the local authorization server, with nothing secret in its output or files."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpline.client.oauth import (
    ClientCredentials,
    IdentityAssertion,
    WorkloadIdentity,
    oauth_settings,
)

from .http_fakes import fake_server
from .oauth_server import CLIENT_ID, CLIENT_SECRET, JWT_BEARER, AuthServer
from .util import run

MCPLINE = str(Path(sys.executable).with_name("mcpline"))


def test_settings_make_each_grant(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text(CLIENT_SECRET + "\n")
    auth = oauth_settings(
        {"grant": "client_credentials", "client_id": "c", "client_secret_file": str(secret)}
    )
    assert isinstance(auth.grant, ClientCredentials) and auth.dpop is None
    auth = oauth_settings(
        {"grant": "workload-identity", "token_file": "/var/run/token", "dpop": "true"}
    )
    assert isinstance(auth.grant, WorkloadIdentity) and auth.dpop is True
    auth = oauth_settings(
        {
            "grant": "identity_assertion",
            "client_id": "c",
            "idp_token_endpoint": "https://idp.example/token",
            "id_token_command": "print-id-token --user me",
            "scopes": "a b",
        }
    )
    assert isinstance(auth.grant, IdentityAssertion) and auth.scopes == ["a", "b"]
    assert oauth_settings({}).grant is None
    assert CLIENT_SECRET not in repr(oauth_settings({"client_id": "c", "client_secret": "S3"}))


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"grant": "password"}, "grant must be one of"),
        ({"grant": "client_credentials", "token_file": "x"}, "does not take token_file"),
        ({"grant": "client_credentials"}, "needs a client_id"),
        ({"grant": "client_credentials", "client_id": "c"}, "client_secret or a private_key"),
        ({"grant": "workload_identity"}, "exactly one of"),
        ({"grant": "identity_assertion", "client_id": "c"}, "idp_token_endpoint"),
        ({"client_secret_file": "/nonexistent/secret"}, "cannot read the client secret file"),
        ({"dpop": "maybe"}, "dpop must be true or false"),
        ({"scopes": 3}, "scopes must be"),
    ],
)
def test_bad_settings_are_named(settings: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        oauth_settings(settings)


async def mcpline(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        MCPLINE,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def test_the_cli_runs_client_credentials_with_dpop_from_flags(tmp_path: Path) -> None:
    server = AuthServer(dpop=True)
    env = {"XDG_CONFIG_HOME": str(tmp_path), "MY_SECRET": CLIENT_SECRET}

    async def main() -> None:
        async with fake_server(server.handler) as srv:
            server.url = srv.url
            code, out, err = await mcpline(
                "tools",
                "--server",
                server.resource,
                "--auth",
                "grant=client_credentials",
                "--auth",
                f"client_id={CLIENT_ID}",
                "--auth",
                "client_secret=${MY_SECRET}",
                "--auth",
                "dpop=true",
                "--verbose",
                env=env,
            )
            assert code == 0, err
            for secret in (CLIENT_SECRET, *server.issued):
                assert secret not in out + err

    run(main(), timeout=90)
    assert [f["grant_type"] for f in server.token_requests] == ["client_credentials"]
    assert all(token_key for token_key in server.issued.values())  # DPoP-bound
    files = list((tmp_path / "mcpline" / "oauth").iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_the_cli_runs_workload_identity_from_a_config_file(tmp_path: Path) -> None:
    server = AuthServer()
    token_file = tmp_path / "workload-token"
    config = tmp_path / "mcp.json"

    async def main() -> None:
        async with fake_server(server.handler) as srv:
            server.url = srv.url
            token_file.write_text(server.workload_token())
            entry = {
                "url": server.resource,
                "auth": {"grant": "workload_identity", "token_file": "${TOKEN_PATH}"},
            }
            config.write_text(json.dumps({"mcpServers": {"svc": entry}}))
            env = {"XDG_CONFIG_HOME": str(tmp_path), "TOKEN_PATH": str(token_file)}
            code, out, err = await mcpline("tools", "--config", str(config), env=env)
            assert code == 0, err
            assert token_file.read_text() not in out + err

    run(main(), timeout=90)
    [form] = server.token_requests
    assert form["grant_type"] == JWT_BEARER and form["assertion"] == token_file.read_text()


def test_the_cli_refuses_bad_auth_settings_before_connecting() -> None:
    async def main() -> None:
        code, out, err = await mcpline(
            "tools", "--server", "http://127.0.0.1:9/mcp", "--auth", "grant=password", env={}
        )
        assert code == 2 and "grant must be one of" in err
        code, out, err = await mcpline("tools", "--auth", "dpop=true", "--", "true", env={})
        assert code == 2 and "--auth needs an http(s) server" in err

    run(main(), timeout=90)
