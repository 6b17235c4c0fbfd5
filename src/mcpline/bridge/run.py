"""Running a bridge: a stdio server behind Streamable HTTP, or a remote endpoint behind stdio.

``serve_http(child(...), host, port)`` launches the stdio server's processes and serves them
at ``http://host:port/mcp`` (mcpline's HTTP transport, uvicorn). ``serve_stdio(remote(url))``
is a stdio server (this process's stdin/stdout, which carry nothing but protocol messages)
forwarding to ``url`` with mcpline's HTTP client, OAuth included. Both return the exit
status: 0, or 2 when the bridged server could not be started or reached.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..client.transports import StdioServer, Transport
from ..errors import JsonRpcError
from ..protocol.state import STATE_KEY_ENV
from .backend import Backend, BackendOptions

if TYPE_CHECKING:
    from ..client.oauth import OAuth


class StderrRelay:
    """A child's stderr lines onto ours, prefixed, at most ``rate`` lines a second (a
    ``burst`` at once): a server that floods its stderr cannot flood the bridge's."""

    def __init__(self, prefix: str = "[server]", rate: float = 200.0, burst: float = 1000.0):
        self.prefix = prefix
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()
        self.dropped = 0

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            self.dropped += 1
            return
        self.tokens -= 1
        try:
            if self.dropped:
                print(f"{self.prefix} … {self.dropped} lines dropped", file=sys.stderr)
                self.dropped = 0
            print(f"{self.prefix} {line}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def child(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    on_stderr: Callable[[str], None] | None = None,
    options: BackendOptions | None = None,
) -> Backend:
    """A backend of child processes of ``command args`` (one per pool slot, one per legacy
    session); their stderr goes to ``on_stderr`` (default: ours, prefixed and rate-bound)."""
    relay = on_stderr if on_stderr is not None else StderrRelay()
    server = StdioServer(
        command,
        args,
        env={**child_environment(os.environ), **(env or {})},
        inherit_env=False,
        cwd=cwd,
        on_stderr=relay,
        close_grace=1.0,
        term_grace=1.0,
    )
    return Backend(lambda: server, options)


BRIDGE_SECRETS = frozenset({"MCPLINE_BRIDGE_TOKEN", STATE_KEY_ENV})
"""The bridge's own secrets in its environment: its clients' bearer token and its
``requestState`` key. Its children never see them (a server may log or return its
environment); a child that needs a value of its own gets it from ``env``."""


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without `BRIDGE_SECRETS`: what a bridged child inherits."""
    return {k: v for k, v in environ.items() if k not in BRIDGE_SECRETS}


def remote(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    auth: OAuth | None = None,
    options: BackendOptions | None = None,
    **http_options: Any,
) -> Backend:
    """A backend that reaches ``url`` (Streamable HTTP) with mcpline's HTTP client. A
    modern endpoint needs no pool (one client sends any number of requests at once), and
    its log messages go to whoever the bridge serves (one stdio client)."""
    from ..client.http import HttpServer

    server = HttpServer(url, dict(headers or {}), auth, **http_options)
    opts = dataclasses.replace(
        options or BackendOptions(legacy="translate"), attribute=False, modern_pool=1
    )
    transport: Callable[[], Transport] = lambda: server  # noqa: E731
    return Backend(transport, opts)


def serve_http(
    backend: Backend,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    ready: Callable[[str], None] | None = None,
    server_options: Mapping[str, Any] | None = None,
    **app_options: Any,
) -> int:
    """Serve ``backend`` over Streamable HTTP until SIGTERM/SIGINT; ``app_options`` are
    `mcpline.transports.http.HttpApp`'s (origins, hosts, ``verify_token``, limits)."""
    from ..transports.http.serve import HttpError, serve
    from .http_front import BridgeServer

    server = BridgeServer(backend, **dict(server_options or {}))
    try:
        serve(server, host, port, path=path, ready=ready, **app_options)
    except HttpError as exc:
        print(f"mcpline bridge: {exc}", file=sys.stderr, flush=True)
        return 2
    except SystemExit:  # uvicorn's own exit when the lifespan startup failed
        if backend.failure is None:
            raise
    return 2 if backend.failure is not None else 0


def serve_stdio(backend: Backend, *, server_options: Mapping[str, Any] | None = None) -> int:
    """Serve ``backend`` on this process's stdin/stdout until the client goes away; a
    server that cannot be reached makes each request fail with -32603 saying why (and be
    tried again)."""
    from ..transports.stdio import claim_stdio, configure_logging, run_loop, serve_fds
    from .http_front import BridgeServer

    configure_logging()
    in_fd, out_fd = claim_stdio()

    async def reach() -> None:
        try:
            await backend.ready()
        except JsonRpcError as exc:
            print(
                f"mcpline bridge: {exc.message.removeprefix('Internal error: ')}", file=sys.stderr
            )
            return
        print(f"mcpline bridge: serving {backend.describe()} on stdio", file=sys.stderr)

    async def main() -> int:
        # Served at once: requests wait for the server to be reached (and the user, if
        # OAuth wants a browser), so a host's first request is never left in our pipe.
        server = BridgeServer(backend, **dict(server_options or {}))
        first = asyncio.ensure_future(reach())
        try:
            await serve_fds(server, in_fd, out_fd)
        finally:
            first.cancel()
            await backend.aclose()
        return 0

    code: int = run_loop(main())
    return code


__all__ = [
    "BRIDGE_SECRETS",
    "StderrRelay",
    "child",
    "child_environment",
    "remote",
    "serve_http",
    "serve_stdio",
]
