"""Serving an `HttpApp` with uvicorn (the ``mcpline[http]`` extra): one process, or several
workers that each import the server file again.

Logs go to stderr, so does the ready line ``mcpline: listening on http://HOST:PORT/PATH``;
nothing is written to stdout. On SIGTERM/SIGINT every event stream is ended first (open
listens get their completion result), then uvicorn lets requests in flight finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ...addresses import canonical_host, is_loopback
from ...protocol.state import STATE_KEY_ENV, env_key_problem
from ...server.scale.attach import Scalable
from ..table import BaseTransport

if TYPE_CHECKING:
    from ...server._options import ServerOptions
    from .app import HttpApp

TARGET_ENV = "MCPLINE_HTTP_TARGET"
"""The ``FILE[:OBJECT]`` each worker imports (set by `serve_workers`)."""
OPTIONS_ENV = "MCPLINE_HTTP_OPTIONS"
"""JSON of the `HttpApp` options each worker uses (set by `serve_workers`)."""
DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds for a request's head (request line and headers) to arrive whole."""
DEFAULT_IDLE_TIMEOUT = 5.0
"""Seconds a kept-alive connection may stay silent between requests."""
DEFAULT_WRITE_TIMEOUT = 30.0
"""Seconds a reader may leave the server's writes unread (the socket's buffer full)."""

DEFAULT_YOUNG_THRESHOLD = 700
"""CPython's threshold for collecting its youngest generation (`gc.get_threshold`)."""
YOUNG_THRESHOLD = 7000
"""The threshold a served process uses instead (`young_collections`)."""

log = logging.getLogger("mcpline.server")


class HttpServed(Scalable, Protocol):
    """What serving over HTTP reads of a server (a `mcpline.Server` is one): its options and
    its ASGI app, and the bus and nonce ledger its workers attach
    (`mcpline.server.scale.attach`)."""

    @property
    def options(self) -> ServerOptions: ...

    def http_app(self, path: str = "/mcp", **options: Any) -> HttpApp: ...


class HttpError(Exception):
    """The HTTP server cannot start (no uvicorn, bad address, port in use); one line."""


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or a bare ``PORT`` (127.0.0.1) → (host, port)."""
    value = text.strip()
    if value.isascii() and value.isdigit():
        host, port_text = "127.0.0.1", value
    else:
        host, sep, port_text = value.rpartition(":")
        if not sep or not host:
            raise HttpError(
                f"bad address {text!r}: expected HOST:PORT or PORT (served at http://HOST:PORT/mcp)"
            )
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise HttpError(f"bad address {text!r}: the port must be 0-65535 (HOST:PORT)")
    return canonical_host(host), int(port_text)


def parse_url(url: str) -> tuple[str, int, str]:
    """``http://HOST:PORT[/PATH]`` → (host, port, path; ``/mcp`` by default)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise HttpError(f"bad URL {url!r}: expected http://HOST:PORT[/PATH]")
    try:
        port = parts.port if parts.port is not None else 80
    except ValueError:
        raise HttpError(f"bad URL {url!r}: the port must be 0-65535") from None
    return canonical_host(parts.hostname), port, parts.path.rstrip("/") or "/mcp"


class _Stopped(BaseException):
    """SIGTERM or SIGINT arrived; uvicorn passes it on once it has shut down."""


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """Let SIGTERM and SIGINT end the server with exit status 0 and no traceback: uvicorn
    handles them, shuts down, and raises them again for the handlers it found (these)."""

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise HttpError("serving over HTTP needs uvicorn: pip install 'mcpline[http]'") from None
    return uvicorn


def exposure_warning(host: str) -> str | None:
    """The one-line warning for a bind beyond loopback (every interface, or one address that
    other hosts reach), else None."""
    if is_loopback(host):
        return None
    where = f"every interface ({host})" if host in ("0.0.0.0", "::") else host
    return (
        f"mcpline: warning: listening on {where}: anyone who can reach this port can call the "
        "server, over plain HTTP; put a TLS proxy and an authorization server in front of it "
        "(see docs/security.md), or bind 127.0.0.1"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio turns Nagle off only on sockets that say TCP, and a
    # response's head and body are two writes (Nagle would hold the body for an ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise HttpError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket, path: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


@dataclass(frozen=True, slots=True)
class Connections:
    """The connection limits of a served app (see `mcpline.transports.http.connections`):
    ``max_connections`` open at once (None: 1024, or the open-file limit less 64 when lower),
    ``header_timeout`` seconds for a request's head, ``idle_timeout`` seconds of silence
    between requests on a kept-alive connection (uvicorn's ``timeout_keep_alive``),
    ``write_timeout`` seconds a reader may leave the server's writes unread before its
    connection is closed."""

    max_connections: int | None = None
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError("max_connections must be positive")
        if not (self.header_timeout > 0 and self.idle_timeout > 0 and self.write_timeout > 0):
            raise ValueError("header_timeout, idle_timeout and write_timeout must be positive")


def _config(
    app: Any,
    server_options: Any,
    app_options: dict[str, Any],
    connections: Connections,
    **extra: Any,
) -> Any:
    uvicorn = _uvicorn()
    try:
        from .connections import ConnectionLimits, default_max_connections, protocol_factory
    except ImportError:
        raise HttpError("serving over HTTP needs httptools: pip install 'mcpline[http]'") from None

    header_limit = int(app_options.get("max_header_bytes", 16 * 1024))
    limits = ConnectionLimits(
        max_connections=connections.max_connections or default_max_connections(),
        header_timeout=connections.header_timeout,
        write_timeout=connections.write_timeout,
        max_head_bytes=max(64 * 1024, 4 * header_limit),
    )
    return uvicorn.Config(
        app,
        http=protocol_factory(limits),
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=connections.idle_timeout,
        timeout_graceful_shutdown=max(1, int(server_options.shutdown_grace + 1.5)),
        **extra,
    )


def quiet_accept_errors(app: HttpApp) -> None:
    """Log failed ``accept()`` calls (out of file descriptors) as one line per interval,
    without asyncio's traceback for each (`connections.quiet_accept_errors`). An
    `HttpApp.on_startup` hook of the processes mcpline launches."""
    from .connections import quiet_accept_errors as install

    install(asyncio.get_running_loop())


def warn_if_exposed(host: str) -> None:
    """`exposure_warning`, if any, as one line on stderr."""
    if (warning := exposure_warning(host)) is not None:
        print(warning, file=sys.stderr, flush=True)


def end_streams_on_signals(app: HttpApp) -> None:
    """From now on SIGTERM and SIGINT first end the app's event streams (open listens get
    their completion result), then reach uvicorn's own handler, whose graceful wait then
    only has short requests to wait for. Call it on the loop, after uvicorn set its handlers
    (at lifespan startup)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue

        def handler(signum: int, frame: Any, previous: Callable[..., Any] = previous) -> None:
            loop.call_soon_threadsafe(app.begin_ending)
            previous(signum, frame)

        signal.signal(sig, handler)


def freeze_heap(app: HttpApp) -> None:
    """Keep what imports and registration built (it lives as long as the process) out of
    the cyclic collector's scans, as stdio does: full collections while serving then look at
    what requests allocate only (a full scan of the startup heap stalls every request for
    tens of milliseconds). An `HttpApp.on_startup` hook of the processes mcpline launches,
    not of an app mounted elsewhere (the heap is the host's). Then `young_collections`."""
    gc.freeze()
    young_collections()


def young_collections() -> None:
    """Collect the youngest generation after `YOUNG_THRESHOLD` net allocations rather than
    CPython's default 700, unless the program chose its own threshold. Requests in flight
    allocate hundreds of objects each, which a busy server holds at once: at the default,
    every few requests a collection scans them all, to free nothing (a request leaves no
    cycle), at a cost that grows with the connections."""
    young, middle, old = gc.get_threshold()
    if young == DEFAULT_YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def _checked(
    server: HttpServed,
    path: str,
    app_options: dict[str, Any],
    max_connections: int | None,
    header_timeout: float,
    idle_timeout: float,
    write_timeout: float,
) -> tuple[Connections, HttpApp]:
    """The connection limits and the app of these options; `HttpError` for bad ones."""
    try:
        connections = Connections(max_connections, header_timeout, idle_timeout, write_timeout)
        return connections, server.http_app(path, **app_options)
    except ValueError as exc:
        raise HttpError(str(exc)) from None


def serve(
    server: HttpServed,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    ready: Callable[[str], None] | None = None,
    max_connections: int | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    **app_options: Any,
) -> None:
    """Serve ``server`` at ``http://host:port/path`` in this process until SIGTERM/SIGINT.
    ``max_connections``, ``header_timeout``, ``idle_timeout`` and ``write_timeout`` are the
    `Connections` limits; ``app_options`` those of `HttpApp`.

    Raises `HttpError` when it cannot start.
    """
    from ..stdio import configure_logging

    configure_logging()
    connections, app = _checked(
        server, path, app_options, max_connections, header_timeout, idle_timeout, write_timeout
    )
    app.on_startup += [end_streams_on_signals, freeze_heap, quiet_accept_errors]
    config = _config(app, server.options, app_options, connections)
    sock = bind(host, port)
    warn_if_exposed(host)
    url = _url(sock, app.path)
    print(f"mcpline: listening on {url}", file=sys.stderr, flush=True)
    if ready is not None:
        ready(url)
    with _stopped_by_signals():
        _uvicorn().Server(config).run(sockets=[sock])


def serve_url(server: HttpServed, url: str, **options: Any) -> None:
    """`serve` at ``http://HOST:PORT[/PATH]``; a failure to start is one line on stderr and
    exit status 2."""
    try:
        host, port, path = parse_url(url)
        serve(server, host, port, path=path, **options)
    except HttpError as exc:
        print(f"mcpline: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


class HttpTransport(BaseTransport["HttpServed"]):
    """The ``http`` row of `mcpline.transports.table`: `serve_url`, and for ``mcpline run``
    `serve_workers` when ``--workers`` is above 1, ``--auth`` (else ``$MCPLINE_AUTH``) as
    `auth_options`, and the shorthand ``--http HOST:PORT``."""

    def serve(self, server: HttpServed, address: str, **options: Any) -> None:
        if options.pop("workers", 1) != 1:
            raise ValueError("several workers import a server file: mcpline run FILE --workers N")
        serve_url(server, address, **options)

    def options(self, given: dict[str, Any], address: str) -> dict[str, Any]:
        options = dict(given)
        workers = options.setdefault("workers", 1)
        if workers < 1:
            raise ValueError("--workers must be at least 1")
        if "idle_timeout" in options and not options["idle_timeout"] > 0:
            raise ValueError("--idle-timeout must be positive")
        from ...server.auth.config import AUTH_ENV

        spec = options.pop("auth", None) or os.environ.get(AUTH_ENV)
        if spec:
            try:
                host, port, path = parse_url(address)
            except HttpError as exc:
                raise ValueError(str(exc)) from None
            options.update(auth_options(spec, host, port, workers))
        options.update(proxy_options(options.pop("oauth_proxy", None), address, workers, spec))
        return options

    def serve_file(
        self, target: str, address: str, load: Callable[[str], HttpServed], **options: Any
    ) -> None:
        # As on stdio, stdout carries nothing but what the server is for (here: nothing):
        # print() and banners of the file, imported next, land on stderr with the logs.
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        workers = options.pop("workers", 1)
        if workers == 1:
            self.serve(load(target), address, **options)
            return
        try:
            host, port, path = parse_url(address)
            serve_workers(
                target,
                host,
                port,
                workers,
                load=load,
                factory=load_worker_app,
                path=path,
                **options,
            )
        except HttpError as exc:
            print(f"mcpline: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    def shorthand(self, value: str) -> str:
        try:
            host, port = parse_bind(value)
        except HttpError as exc:
            raise ValueError(str(exc)) from None
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/mcp"


HTTP = HttpTransport()


def auth_options(spec: str, host: str, port: int, workers: int) -> dict[str, Any]:
    """``verify_token`` and ``resource_metadata`` of ``--auth SPEC`` (workers get only the
    metadata here, and build the verifier from ``$MCPLINE_AUTH``); `ValueError` if bad."""
    from ...server.auth.config import AUTH_ENV, AuthConfig

    name = f"[{host}]" if ":" in host else host
    default = f"http://{name}:{port}/mcp" if port else None
    try:
        config = AuthConfig.parse(spec, default_audience=default, env=os.environ)
    except ValueError as exc:
        raise ValueError(f"--auth: {exc}") from None
    if workers > 1:
        audience = config.values["audience"]
        os.environ[AUTH_ENV] = spec if "audience=" in spec else f"{spec},audience={audience}"
        return {"resource_metadata": config.metadata()}
    return {"verify_token": config.verifier(), "resource_metadata": config.metadata()}


def proxy_options(spec: str | None, address: str, workers: int, auth: str | None) -> dict[str, Any]:
    """``oauth_proxy`` of ``--oauth-proxy SPEC`` (else ``$MCPLINE_OAUTH_PROXY``); `ValueError`
    if bad, with ``--auth`` or with several workers (its sign-ins live in one process)."""
    from ...server.auth.proxy_config import PROXY_ENV

    spec = spec or os.environ.get(PROXY_ENV)
    if not spec:
        return {}
    if auth:
        raise ValueError(
            "--oauth-proxy and --auth exclude each other (the proxy verifies its own tokens)"
        )
    if workers > 1:
        raise ValueError("--oauth-proxy keeps its sign-ins in one process: it needs --workers 1")
    from ...server.auth.proxy_config import app_options

    try:
        host, port, _ = parse_url(address)
    except HttpError as exc:
        raise ValueError(str(exc)) from None
    name = f"[{host}]" if ":" in host else host
    try:
        return app_options(spec, default_issuer=f"http://{name}:{port}", env=os.environ)
    except (ValueError, OSError) as exc:
        raise ValueError(f"--oauth-proxy: {exc}") from None


def serve_workers(
    target: str,
    host: str,
    port: int,
    workers: int,
    *,
    load: Callable[[str], HttpServed],
    factory: Callable[[], HttpApp],
    path: str = "/mcp",
    max_connections: int | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    **app_options: Any,
) -> None:
    """Serve ``FILE[:OBJECT]`` with ``workers`` uvicorn worker processes sharing one socket.
    ``load`` imports the file here, once, so that a bad file fails before any worker starts;
    each worker calls ``factory`` (uvicorn's app factory, imported there by its module and
    name), which imports the file again (``$MCPLINE_HTTP_TARGET``) and returns `worker_app`
    of it. Sealed ``requestState`` must verify on every worker, so ``$MCPLINE_STATE_KEY`` is
    required (`HttpError` otherwise). Each worker takes its bus and nonce ledger from
    ``$MCPLINE_BUS_URL`` where the file gives none (`mcpline.server.scale.attach`); without a bus
    one warning line says what is not shared. The `Connections` limits hold per worker."""
    from ..stdio import configure_logging

    if not os.environ.get(STATE_KEY_ENV):
        raise HttpError(
            f"--workers {workers} needs ${STATE_KEY_ENV}: set it to one secret shared by every "
            "worker, so that a requestState sealed by one verifies on the others"
        )
    if (problem := env_key_problem()) is not None:
        raise HttpError(problem)
    configure_logging()
    server = load(target)  # fail here, once, rather than in every worker
    connections, _ = _checked(
        server, path, app_options, max_connections, header_timeout, idle_timeout, write_timeout
    )
    _warn_unshared(server, workers)
    _uvicorn()
    from uvicorn.supervisors import Multiprocess

    os.environ[TARGET_ENV] = target
    os.environ[OPTIONS_ENV] = json.dumps({"path": path, **app_options})
    sock = bind(host, port)
    config = _config(
        f"{factory.__module__}:{factory.__qualname__}",
        server.options,
        app_options,
        connections,
        factory=True,
        workers=workers,
        fd=sock.fileno(),
    )
    warn_if_exposed(host)
    print(
        f"mcpline: listening on {_url(sock, path.rstrip('/') or '/')} with {workers} workers "
        "(legacy 2025-11-25 sessions are bound to one worker: they need a single worker or "
        "sticky routing)",
        file=sys.stderr,
        flush=True,
    )
    Multiprocess(config, sockets=[sock]).run()


def _warn_unshared(server: HttpServed, workers: int) -> None:
    """One warning line when the workers would not share changes or used states."""
    from ...server.scale.attach import BUS_ENV, attach_from_env, missing

    attach_from_env(server)  # as each worker will (`worker_app`)
    gaps = missing(server)
    if not gaps:
        return
    shared, lacks = [], []
    if "bus" in gaps:
        shared.append("no bus")
        lacks.append("a subscriptions/listen stream hears only the changes made on its own worker")
    if "ledger" in gaps:
        shared.append("no nonce ledger")
        lacks.append("a requestState can be used once on each worker")
    print(
        f"mcpline run: warning: the {workers} workers share {' and '.join(shared)}: "
        f"{' and '.join(lacks)}; give --bus redis://HOST:PORT/DB (or ${BUS_ENV}), "
        "see docs/scale-out.md",
        file=sys.stderr,
        flush=True,
    )


def worker_app(server: HttpServed, **extra: Any) -> HttpApp:
    """The app of one worker process of `serve_workers`, for ``server`` (the file imported
    again in that process): its bus from ``$MCPLINE_BUS_URL``, the options `serve_workers`
    was given and ``extra`` (those that are no JSON, such as ``verify_token``)."""
    options = {**json.loads(os.environ.get(OPTIONS_ENV) or "{}"), **extra}
    path = options.pop("path", "/mcp")
    from ...server.scale.attach import attach_from_env

    attach_from_env(server)  # $MCPLINE_BUS_URL (mcpline run --bus)
    app = server.http_app(path, **options)
    app.on_startup += [end_streams_on_signals, freeze_heap, quiet_accept_errors]
    return app


def load_worker_app() -> HttpApp:
    """The app of one worker process of ``mcpline run FILE --http --workers N`` (uvicorn's
    app factory, given to `serve_workers`): the file named by ``$MCPLINE_HTTP_TARGET``
    imported again, verifying tokens as ``$MCPLINE_AUTH`` says."""
    from ...server.auth.config import AUTH_ENV, app_options
    from ...server.loading import load_server
    from ..stdio import configure_logging

    configure_logging()
    spec = os.environ.get(AUTH_ENV)
    extra = app_options(spec, env=os.environ) if spec else {}
    return worker_app(load_server(os.environ[TARGET_ENV]), **extra)


__all__ = [
    "auth_options",
    "bind",
    "Connections",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_WRITE_TIMEOUT",
    "DEFAULT_YOUNG_THRESHOLD",
    "end_streams_on_signals",
    "exposure_warning",
    "freeze_heap",
    "young_collections",
    "YOUNG_THRESHOLD",
    "HTTP",
    "HttpError",
    "HttpServed",
    "HttpTransport",
    "load_worker_app",
    "OPTIONS_ENV",
    "parse_bind",
    "parse_url",
    "quiet_accept_errors",
    "serve",
    "serve_url",
    "serve_workers",
    "TARGET_ENV",
    "warn_if_exposed",
    "worker_app",
]
