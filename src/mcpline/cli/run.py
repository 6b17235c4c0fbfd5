"""``mcpline run FILE[:OBJECT] [--listen ADDRESS | --http HOST:PORT] [--bus URL]``: serve a
server defined in a Python file."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..server.loading import load_server, load_worker_app

SOCKET_OPTIONS = (
    "token_file",
    "no_auth",
    "max_connections",
    "max_pending",
    "auth_timeout",
    "idle_timeout",
    "max_line_bytes",
)
HTTP_OPTIONS = {
    "header_timeout": "header_timeout",
    "write_timeout": "write_timeout",
    "max_body_total": "max_body_total_bytes",
    "max_outbound_total": "max_outbound_total_bytes",
    "max_requests_per_client": "max_requests_per_client",
    "max_listens_per_client": "max_listens_per_client",
    "max_sessions": "max_sessions",
    "max_sessions_per_client": "max_sessions_per_client",
}
"""The --http-only flags (argparse names) and the `http_app`/`serve` options they set."""
SHARE_FLAGS = (
    (
        "--max-requests-per-client",
        128,
        "requests (listens included) one client may have in progress; past it 429 with Retry-After",
    ),
    ("--max-listens-per-client", 32, "listens one client may hold open; past it 429"),
    (
        "--max-sessions",
        1024,
        "legacy 2025-11-25 sessions open at once; a new one ends only a "
        "session idle for 10 minutes, else 503 with Retry-After",
    ),
    (
        "--max-sessions-per-client",
        16,
        "legacy sessions of one client; past it the client's own "
        "least recently used idle session ends, else 429",
    ),
)
"""Per-client shares of --http: the flag, its default and what it bounds."""
SHARED_OPTIONS = ("max_connections", "idle_timeout")
"""Options of both the socket listeners and --http."""


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="serve the mcpline Server defined in a Python file")
    p.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a .py file, optionally with the name of its Server object",
    )
    p.add_argument(
        "--listen",
        metavar="ADDRESS",
        default="stdio",
        help="stdio (default), unix:/path/to.sock, tcp:HOST:PORT or http://HOST:PORT/mcp "
        "(the same as --http HOST:PORT)",
    )
    p.add_argument(
        "--bus",
        metavar="URL",
        help="a Redis (redis://HOST:PORT/DB) that carries list changes and resource updates "
        "between the processes of this server and records used requestStates, where the file "
        "sets none (default: $MCPLINE_BUS_URL; see docs/scale-out.md; needs mcpline[redis])",
    )
    p.add_argument(
        "--task-quota",
        metavar="SPEC",
        help="what tasks may keep, e.g. tasks=100,bytes=32MiB,anonymous_tasks=10 (per "
        "principal, anonymous callers together, and total_* for the server; default: "
        "$MCPLINE_TASK_QUOTA, else 256 tasks and 64 MiB a principal; see docs/tasks.md)",
    )
    h = p.add_argument_group("Streamable HTTP (see docs/http.md; needs mcpline[http])")
    h.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve MCP over HTTP at http://HOST:PORT/mcp (a bare PORT binds 127.0.0.1)",
    )
    h.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="--http: N worker processes, each importing FILE (needs $MCPLINE_STATE_KEY)",
    )
    h.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="--http: a browser origin to accept, e.g. http://localhost:6274 (repeatable)",
    )
    h.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST",
        help="--http: a Host header name to accept besides loopback names (repeatable)",
    )
    h.add_argument(
        "--max-body-total",
        type=int,
        metavar="BYTES",
        help="--http: request bodies held at once by all requests; past it a POST gets 503 "
        "with Retry-After before its body is read (default 64 MiB; see docs/security.md)",
    )
    h.add_argument(
        "--header-timeout",
        type=float,
        metavar="SECONDS",
        help="--http: a request's headers must arrive whole within this time, else 408 and "
        "close; also closes connections that send nothing (default 10)",
    )
    h.add_argument(
        "--write-timeout",
        type=float,
        metavar="SECONDS",
        help="--http: a client that leaves the server's writes unread this long (its socket "
        "buffer full) has its connection closed and its request cancelled (default 30)",
    )
    h.add_argument(
        "--max-outbound-total",
        type=int,
        metavar="BYTES",
        help="--http: bytes waiting to be written to all clients together; past it the "
        "responses with the most queued end first (default 64 MiB; see docs/security.md)",
    )
    for flag, default, what in SHARE_FLAGS:
        h.add_argument(
            flag,
            type=int,
            metavar="N",
            help=f"--http: {what} (default {default}; see docs/security.md)",
        )
    h.add_argument(
        "--auth",
        metavar="SPEC",
        help="--http: verify OAuth access tokens, e.g. jwks=URL,issuer=URL,audience=URL or "
        "introspection=URL,client_id=ID,issuer=URL (secret: $MCPLINE_AUTH_CLIENT_SECRET); "
        "serves the RFC 9728 metadata it implies (default: $MCPLINE_AUTH; see docs/auth.md)",
    )
    h.add_argument(
        "--metrics",
        action="store_true",
        help="--http: serve Prometheus metrics at /metrics, behind the same checks and "
        "--auth as the endpoint (see docs/observability.md)",
    )
    g = p.add_argument_group("socket listeners (--listen unix:/tcp:, see docs/sockets.md)")
    g.add_argument(
        "--token-file",
        metavar="PATH",
        help="tcp: read the token from PATH (default: $MCPLINE_TOKEN, else a new random one)",
    )
    g.add_argument(
        "--no-auth",
        action="store_true",
        help="tcp: accept clients without a token (any local user can call the server)",
    )
    g.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="connections open at once; more are closed at once (default 64; --http: 503 "
        "and close, default 1024 or the open-file limit less 64)",
    )
    g.add_argument(
        "--max-pending",
        type=int,
        metavar="N",
        help="connections not yet authenticated at once; one more closes the oldest (default 16)",
    )
    g.add_argument(
        "--auth-timeout",
        type=float,
        metavar="SECONDS",
        help="close a connection that has not sent its first line (tcp: the token) within "
        "this time (default 5)",
    )
    g.add_argument(
        "--idle-timeout",
        type=float,
        metavar="SECONDS",
        help="close a connection idle this long, 0 for never (default 300; --http: between "
        "requests, default 5, never 0)",
    )
    g.add_argument(
        "--max-line-bytes",
        type=int,
        metavar="N",
        help="the longest accepted line (default 4 MiB, or the server's limit if smaller)",
    )
    p.set_defaults(func=run)


def socket_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `serve_socket` options given on the command line; SystemExit(2) on bad ones."""
    given = [name for name in SOCKET_OPTIONS if getattr(args, name) not in (None, False)]
    if args.listen == "stdio":
        if given:
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            _usage(f"{flags}: only for --listen unix:PATH or tcp:HOST:PORT")
        return {}
    tcp = args.listen.startswith("tcp:")
    if (args.token_file or args.no_auth) and not tcp:
        _usage("--token-file and --no-auth are for tcp: (a unix socket is protected by its mode)")
    if args.token_file and args.no_auth:
        _usage("--token-file and --no-auth exclude each other")
    options: dict[str, Any] = {}
    if args.token_file:
        from ..addresses import read_token_file

        try:
            options["token"] = read_token_file(args.token_file)
        except ValueError as exc:
            _usage(str(exc))
    if args.no_auth:
        options["auth"] = False
    if args.max_connections is not None:
        options["max_connections"] = args.max_connections
    if args.max_pending is not None:
        options["max_pending"] = args.max_pending
    if args.auth_timeout is not None:
        options["auth_timeout"] = args.auth_timeout
    if args.idle_timeout is not None:
        options["idle_timeout"] = args.idle_timeout or None
    if args.max_line_bytes is not None:
        options["max_line_bytes"] = args.max_line_bytes
    return options


def _usage(message: str) -> None:
    print(f"mcpline run: {message}", file=sys.stderr)
    raise SystemExit(2)


def http_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `HttpApp` options given on the command line; SystemExit(2) on bad ones."""
    options: dict[str, Any] = {}
    if args.allow_origin:
        options["allowed_origins"] = list(args.allow_origin)
    if args.allow_host:
        options["allowed_hosts"] = list(args.allow_host)
    if args.metrics:
        options["metrics"] = True
    named = {**{name: name for name in SHARED_OPTIONS}, **HTTP_OPTIONS}
    for flag, option in named.items():
        value = getattr(args, flag)
        if value is None:
            continue
        if not value > 0:
            _usage(f"--{flag.replace('_', '-')} must be positive")
        options[option] = value
    return options


def bus_url(args: argparse.Namespace) -> str | None:
    """``--bus`` or ``$MCPLINE_BUS_URL``, checked, and put in the environment (where the
    workers of ``--workers N`` find it); SystemExit(2) on a bad one."""
    from ..server.scale_out import BUS_ENV, check_url

    url = args.bus if args.bus is not None else os.environ.get(BUS_ENV)
    if not url:
        return None
    try:
        check_url(url)
    except (ValueError, ImportError) as exc:
        _usage(str(exc))
    os.environ[BUS_ENV] = url
    return url


def load_with_bus(target: str, url: str | None) -> Any:
    """`load_server`, then the bus and ledger of ``url`` where the file set none (a note on
    stderr when the file's own bus is kept)."""
    server = load_server(target)
    if url:
        from ..server.scale_out import attach

        if not attach(server, url).bus:
            print(
                "mcpline run: note: the server has its own bus, which it keeps (--bus serves "
                "only as its nonce ledger, if it had a process-local one)",
                file=sys.stderr,
                flush=True,
            )
    return server


def run_http(args: argparse.Namespace) -> int:
    from ..transports.http.serve import HttpError, parse_bind, serve, serve_workers

    if args.listen != "stdio":
        _usage("--http and --listen exclude each other")
    wrong = [
        n
        for n in SOCKET_OPTIONS
        if n not in SHARED_OPTIONS and getattr(args, n) not in (None, False)
    ]
    if wrong:
        _usage(", ".join("--" + n.replace("_", "-") for n in wrong) + ": not for --http")
    workers = 1 if args.workers is None else args.workers
    if workers < 1:
        _usage("--workers must be at least 1")
    options = http_options(args)
    url = bus_url(args)
    # As on stdio, stdout carries nothing but what the server is for (here: nothing):
    # print() and banners of the file, imported next, land on stderr with the logs.
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        host, port = parse_bind(args.http)
        from ..server.auth.config import AUTH_ENV

        spec = args.auth if args.auth is not None else os.environ.get(AUTH_ENV)
        if spec:
            options.update(auth_options(spec, host, port, workers))
        if workers > 1:
            serve_workers(
                args.target,
                host,
                port,
                workers,
                load=load_server,
                factory=load_worker_app,
                **options,
            )
        else:
            serve(load_with_bus(args.target, url), host, port, **options)
    except HttpError as exc:
        print(f"mcpline run: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def auth_options(spec: str, host: str, port: int, workers: int) -> dict[str, Any]:
    """``verify_token`` and ``resource_metadata`` of ``--auth SPEC`` (workers get only the
    metadata here, and build the verifier from ``$MCPLINE_AUTH``); SystemExit(2) if bad."""
    from ..server.auth.config import AUTH_ENV, AuthConfig

    name = f"[{host}]" if ":" in host else host
    default = f"http://{name}:{port}/mcp" if port else None
    try:
        config = AuthConfig.parse(spec, default_audience=default, env=os.environ)
    except ValueError as exc:
        _usage(f"--auth: {exc}")
    if workers > 1:
        audience = config.values["audience"]
        os.environ[AUTH_ENV] = spec if "audience=" in spec else f"{spec},audience={audience}"
        return {"resource_metadata": config.metadata()}
    return {"verify_token": config.verifier(), "resource_metadata": config.metadata()}


def task_quota(args: argparse.Namespace) -> None:
    """``--task-quota``, checked, put in the environment where `Server` (and every worker of
    ``--workers N``) reads it; SystemExit(2) on a bad one."""
    if args.task_quota is None:
        return
    from ..server.task_quota import QUOTA_ENV, TaskQuota

    try:
        TaskQuota.parse(args.task_quota)
    except ValueError as exc:
        _usage(f"--task-quota: {exc}")
    os.environ[QUOTA_ENV] = args.task_quota


def run(args: argparse.Namespace) -> int:
    from ..protocol.state import env_key_problem

    if (problem := env_key_problem()) is not None:
        _usage(problem)
    task_quota(args)
    if args.http is not None:
        return run_http(args)
    http_only = [n for n in HTTP_OPTIONS if getattr(args, n) is not None]
    if (
        args.workers is not None
        or args.allow_origin
        or args.allow_host
        or http_only
        or args.auth
        or args.metrics
    ):
        _usage(
            "--workers, --allow-origin, --allow-host, --header-timeout, --max-body-total, "
            "--auth, --metrics and the per-client shares (--max-requests-per-client, ...) are "
            "for --http"
        )
    options = socket_options(args)
    url = bus_url(args)
    if args.listen == "stdio":
        # Claim stdout before user code is imported, so that import-time prints and
        # banners land on stderr instead of corrupting the protocol stream.
        from ..transports.stdio import claim_stdio

        claim_stdio()
    server = load_with_bus(args.target, url)
    server.run(args.listen, **options)
    return 0
