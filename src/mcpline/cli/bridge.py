"""``mcpline bridge``: a stdio server served over Streamable HTTP, or an HTTP endpoint served
over stdio (see docs/bridge.md).

    mcpline bridge --http HOST:PORT [--pool N] -- SERVER_CMD [ARGS...]
    mcpline bridge --http HOST:PORT --config FILE --name NAME        (a "command" entry)
    mcpline bridge --stdio --server https://host/mcp [--header 'K: V' ...]
    mcpline bridge --stdio --config FILE --name NAME                 (a "url" entry)

The ``mcpServers`` entry is read by the client commands' loader (``${VAR}`` expansion
included). Exit status 2 on a usage error or when the bridged server cannot be started or
reached; everything but protocol messages goes to stderr.
"""

from __future__ import annotations

import argparse
import hmac
import os
import sys
from typing import Any

from ..protocol import MAX_INPUT_ROUNDS

BEARER_ENV = "MCPLINE_BRIDGE_TOKEN"
"""The bearer token HTTP clients of ``--http`` must send, when ``--bearer-token-file`` is not
given (unset: no token is required)."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bridge",
        help="serve a stdio server over HTTP (--http), or an HTTP server over stdio (--stdio)",
        description="Serve a stdio MCP server over Streamable HTTP, or an HTTP one over stdio.",
        usage=(
            "mcpline bridge (--http HOST:PORT | --stdio) [options] "
            "(-- SERVER_CMD [ARGS...] | --server URL | --config FILE [--name NAME])"
        ),
    )
    way = p.add_argument_group("direction (one of)")
    way.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve the stdio server at http://HOST:PORT/mcp (a bare PORT binds 127.0.0.1)",
    )
    way.add_argument(
        "--stdio", action="store_true", help="serve the HTTP server (--server) on stdin/stdout"
    )
    src = p.add_argument_group("the bridged server (one of)")
    src.add_argument(
        "--server", metavar="URL", help="--stdio: the http(s)://HOST:PORT/mcp endpoint"
    )
    src.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="--stdio: an HTTP header for every request to the server (repeatable)",
    )
    src.add_argument("--config", metavar="FILE", help="an mcpServers JSON config file")
    src.add_argument("--name", metavar="NAME", help="which server of --config")
    run = p.add_argument_group("upstreams")
    run.add_argument(
        "--pool",
        type=int,
        default=2,
        metavar="N",
        help="long-lived server processes for 2026-07-28 traffic (--stdio: legacy sessions "
        "with a legacy-only endpoint); default 2",
    )
    run.add_argument(
        "--legacy",
        choices=("sessions", "translate"),
        help="legacy (initialize) clients of a 2026-07-28 server: a server process of their "
        "own per session (--http default) or translated onto the pool (--stdio default)",
    )
    run.add_argument(
        "--input-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long a client may take to answer the server's request for input",
    )
    run.add_argument(
        "--call-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="a forwarded request (a listen excepted) with no answer and no progress for this "
        "long is cancelled upstream and fails with -32603 (default 600)",
    )
    run.add_argument(
        "--max-rounds",
        type=int,
        default=MAX_INPUT_ROUNDS,
        metavar="N",
        help="how often one request of a legacy client translated onto a 2026-07-28 server "
        "(--legacy translate, the --stdio default) may ask it for input; one more fails the "
        f"request with -32603 (default {MAX_INPUT_ROUNDS}, as mcpline's client)",
    )
    run.add_argument(
        "--quiet", action="store_true", help="--http: drop the server processes' stderr"
    )
    web = p.add_argument_group("--http: security and limits (see docs/http.md)")
    web.add_argument("--path", default="/mcp", help="the endpoint's path (default /mcp)")
    web.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin to accept (repeatable)",
    )
    web.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host header name to accept besides loopback names (repeatable)",
    )
    web.add_argument(
        "--bearer-token-file",
        metavar="PATH",
        help=f"clients must send this file's token as a bearer token (else ${BEARER_ENV})",
    )
    web.add_argument(
        "--max-sessions",
        type=int,
        default=16,
        metavar="N",
        help="legacy sessions (each a server process) at once; default 16",
    )
    web.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=4,
        metavar="N",
        help="legacy sessions of one client (its token's principal, else its address); past "
        "it the client's own least recently used idle session ends, else 429; default 4",
    )
    web.add_argument(
        "--session-rate",
        type=float,
        default=1.0,
        metavar="PER_SECOND",
        help="new legacy sessions (server processes) one client may start per second, after a "
        "burst of --max-sessions-per-client; past it 429 with Retry-After; default 1",
    )
    web.add_argument(
        "--session-idle-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="a legacy session idle this long is closed (and its process); default 600",
    )
    web.add_argument(
        "--max-body-bytes", type=int, metavar="N", help="the largest request body (default 4 MiB)"
    )
    web.add_argument(
        "--metrics",
        action="store_true",
        help="serve Prometheus metrics at /metrics, behind the same checks and bearer token as "
        "the endpoint, as mcpline run --http --metrics (see docs/observability.md)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=main)


class _Usage(Exception):
    """Bad command-line input (exit 2)."""


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except _Usage as exc:
        print(f"mcpline bridge: {exc}", file=sys.stderr, flush=True)
        return 2


def _main(args: argparse.Namespace) -> int:
    from ..bridge.backend import BackendOptions
    from ..protocol.state import env_key_problem
    from .config import load_config, parse_headers
    from .options import UsageError

    if (problem := env_key_problem()) is not None:
        raise _Usage(problem)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(args.http) == bool(args.stdio):
        raise _Usage("give --http HOST:PORT (serve a stdio server) or --stdio (serve a URL)")
    if args.pool < 1:
        raise _Usage("--pool must be at least 1")
    if not (args.input_timeout > 0 and args.call_timeout > 0):
        raise _Usage("--input-timeout and --call-timeout must be positive")
    if args.max_rounds < 0:
        raise _Usage("--max-rounds must be at least 0")
    if sum(bool(x) for x in (command, args.server, args.config)) != 1:
        raise _Usage("give the server as -- SERVER_CMD [ARGS...], --server URL or --config FILE")
    if args.name and not args.config:
        raise _Usage("--name needs --config")
    try:
        headers = parse_headers(args.header)
        entry = load_config(args.config, args.name) if args.config else None
    except UsageError as exc:
        raise _Usage(str(exc)) from None
    options = BackendOptions(
        pool=args.pool,
        legacy=args.legacy or ("sessions" if args.http else "translate"),
        input_timeout=args.input_timeout,
        call_timeout=args.call_timeout,
        max_rounds=args.max_rounds,
    )
    if args.http:
        if args.server or args.header:
            raise _Usage("--server and --header are for --stdio")
        if entry is not None:
            if entry.command is None:
                raise _Usage(f"server {entry.name!r} is an http one: bridge it with --stdio")
            return _http(args, entry.command, entry.args, entry.env, entry.cwd, options)
        return _http(args, command[0], command[1:], None, None, options)
    if command:
        raise _Usage("--stdio bridges an HTTP server: give --server URL or --config FILE")
    if entry is not None:
        if entry.url is None:
            raise _Usage(f"server {entry.name!r} is a stdio one: bridge it with --http")
        return _stdio(args, entry.url, {**entry.headers, **headers}, options)
    return _stdio(args, args.server, headers, options)


def _http(
    args: argparse.Namespace,
    command: str,
    cmd_args: list[str],
    env: dict[str, str] | None,
    cwd: str | None,
    options: Any,
) -> int:
    from ..bridge.run import StderrRelay, child, serve_http
    from ..transports.http.serve import HttpError, parse_bind

    if min(args.max_sessions, args.max_sessions_per_client) < 1 or not (
        args.session_idle_timeout > 0 and args.session_rate > 0
    ):
        raise _Usage(
            "--max-sessions, --max-sessions-per-client, --session-idle-timeout and "
            "--session-rate must be positive"
        )
    try:
        host, port = parse_bind(args.http)
    except HttpError as exc:
        raise _Usage(str(exc)) from None
    app: dict[str, Any] = {
        "allowed_origins": list(args.allow_origin),
        "allowed_hosts": list(args.allow_host),
        "max_sessions": args.max_sessions,
        "max_sessions_per_client": args.max_sessions_per_client,
        "session_rate": args.session_rate,
        "session_idle_timeout": args.session_idle_timeout,
    }
    if args.max_body_bytes is not None:
        app["max_body_bytes"] = args.max_body_bytes
    if args.metrics:
        app["metrics"] = True
    token = _bearer_token(args.bearer_token_file)
    if token is not None:

        def verify(presented: str) -> str | None:
            return "bearer" if hmac.compare_digest(presented.encode(), token.encode()) else None

        app["verify_token"] = verify
    # Nothing but the protocol is ours to write, and over HTTP that is not stdout.
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    relay = (lambda line: None) if args.quiet else StderrRelay()
    backend = child(command, cmd_args, env=env, cwd=cwd, on_stderr=relay, options=options)
    return serve_http(backend, host, port, path=args.path, **app)


def _bearer_token(path: str | None) -> str | None:
    from ..addresses import check_token, read_token_file

    if path is None:
        value = os.environ.get(BEARER_ENV)
        if not value:
            return None
        try:
            return check_token(value, f"${BEARER_ENV}")
        except ValueError as exc:
            raise _Usage(str(exc)) from None
    try:
        return read_token_file(path)
    except ValueError as exc:
        raise _Usage(f"--bearer-token-file: {exc}") from None


def _stdio(args: argparse.Namespace, url: str, headers: dict[str, str], options: Any) -> int:
    from ..bridge.run import remote, serve_stdio
    from ..client.oauth import FileTokenStore, OAuth

    web = ("allow_origin", "allow_host", "bearer_token_file", "max_body_bytes", "metrics")
    if any(getattr(args, n) for n in web):
        raise _Usage(
            "--allow-origin, --allow-host, --bearer-token-file, --max-body-bytes, --metrics: --http"
        )
    if not url.startswith(("http://", "https://")):
        raise _Usage(f"--server must be an http(s)://HOST:PORT/mcp URL, not {url[:60]!r}")
    # A server that answers 401 gets the browser flow (the URL is also printed on stderr);
    # tokens are kept in the user's config directory (0600) and refreshed.
    auth = OAuth(client_name="mcpline-bridge", store=FileTokenStore())
    try:
        backend = remote(url, headers, auth=auth, options=options, close_grace=1.0)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    return serve_stdio(backend)


__all__ = ["BEARER_ENV", "main", "register"]
