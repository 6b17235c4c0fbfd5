"""The `Client` a command line names: its transport (``-- CMD``, ``--server``, ``--config``)
and the one-shot options (``--timeout`` as a deadline, ``--era``, ``--verbose``)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .._version import version
from .config import load_config, parse_auth, parse_headers
from .options import DEFAULT_TIMEOUT, UsageError
from .output import note

if TYPE_CHECKING:
    from ..client import Client, Transport
    from .answers import Answers
    from .runner import Run


def offers(description: Any, capability: str) -> bool:
    """Whether the server declared ``capability``; true when its capabilities are unknown
    (a modern server that refused ``server/discover``), where only asking can tell."""
    return "capabilities" not in description.raw or capability in description.capabilities


def offers_none(capability: str) -> str:
    return f"this server offers no {capability} (it declared no {capability} capability)"


async def require(client: Client, capability: str) -> Any:
    """The server's description; exit 2 (`UsageError`) before sending a request the server
    never declared it serves."""
    description = await client.discover()
    if not offers(description, capability):
        raise UsageError(offers_none(capability))
    return description


def _http_transport(
    url: str, headers: dict[str, str], settings: dict[str, Any], cross_origin: bool = False
) -> Transport:
    from ..client.http import HttpServer
    from ..client.oauth import FileTokenStore, oauth_settings

    # A server that answers 401 gets the grant ``settings`` name (by default the browser
    # flow); tokens and DPoP keys are kept (0600) for next time.
    try:
        auth = oauth_settings(settings, client_name="mcpline-cli", store=FileTokenStore())
        return HttpServer(
            url, headers, auth, close_grace=1.0, follow_cross_origin_redirects=cross_origin
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@contextlib.asynccontextmanager
async def make_client(
    args: argparse.Namespace, run: Run, answers: Answers | None = None
) -> AsyncIterator[Client]:
    """The client for the server the command line names, with the one-shot options
    (``answers`` answers the server's input requests); closed on the way out within what
    ``run``'s deadline leaves (`Run.shutdown_within`)."""
    client = _new_client(args, run, answers)
    try:
        yield client
    finally:
        await client.aclose(run.shutdown_within())


def _new_client(args: argparse.Namespace, run: Run, answers: Answers | None) -> Client:
    """The client: requests time out after ``--timeout`` (``run`` keeps the deadline of
    the whole command), shutdown graces 1 s."""
    from ..client import SocketServer, StdioServer

    chosen = [
        flag
        for flag, given in (
            ("-- SERVER_CMD", args.server_cmd),
            ("--server", args.server),
            ("--config", args.config),
        )
        if given
    ]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} exclude each other: give one server")
    if not chosen:
        raise UsageError(
            "give the server as -- SERVER_CMD [ARGS...], --server ADDRESS "
            "or --config FILE --name NAME"
        )
    if args.name and not args.config:
        raise UsageError("--name needs --config")
    is_http = (args.server or "").startswith(("http://", "https://"))
    if args.token_file and not (args.server or "").startswith("tcp:"):
        raise UsageError("--token-file needs --server tcp:HOST:PORT")
    if args.header and not (is_http or args.config):
        raise UsageError("--header needs an http(s) server")
    cross_origin = bool(getattr(args, "follow_cross_origin_redirects", False))
    if cross_origin and not (is_http or args.config):
        raise UsageError("--follow-cross-origin-redirects needs an http(s) server")
    if args.auth and not (is_http or args.config):
        raise UsageError("--auth needs an http(s) server")
    headers = parse_headers(args.header)
    auth = parse_auth(args.auth)
    transport: Transport
    if is_http:
        transport = _http_transport(args.server, headers, auth, cross_origin)
    elif args.server:
        from ..addresses import parse_address, read_token_file

        try:
            parse_address(args.server)
            token = read_token_file(args.token_file) if args.token_file else None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        transport = SocketServer(args.server, token=token, close_grace=1.0)
    else:
        if args.config:
            entry = load_config(args.config, args.name)
            if entry.url is not None:
                transport = _http_transport(
                    entry.url, {**entry.headers, **headers}, {**entry.auth, **auth}, cross_origin
                )
                return _client(args, run, answers, transport)
            if headers or auth:
                raise UsageError("--header and --auth need an http(s) server")
            assert entry.command is not None
            command, cmd_args, env, cwd = entry.command, entry.args, entry.env, entry.cwd
        else:
            command, cmd_args, env, cwd = args.server_cmd[0], args.server_cmd[1:], None, None
        transport = StdioServer(
            command,
            cmd_args,
            env=env,
            cwd=cwd,
            on_stderr=_server_stderr if args.verbose else _ignore,
            close_grace=1.0,
            term_grace=1.0,
        )
    return _client(args, run, answers, transport)


def _client(
    args: argparse.Namespace, run: Run, answers: Answers | None, transport: Transport
) -> Client:
    from ..client import Client

    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    return Client(
        transport,
        timeout=timeout,
        max_timeout=max(600.0, timeout),
        probe_timeout=min(5.0, timeout / 2),
        era=args.era,
        client_info={"name": "mcpline-cli", "version": version()},
        trace=run.trace,
        log_level=run.log_level,
        on_log=run.on_log,
        **(answers.options() if answers is not None else {}),
    )


def _server_stderr(line: str) -> None:
    note(f"[server] {line}")


def _ignore(line: str) -> None:
    pass


__all__ = ["make_client", "offers", "offers_none", "require"]
