"""The server transports, one row each: what `Server.run` and ``mcpline run`` serve.

As in uvicorn's protocol tables, a row names its transport by an import string, so that a
transport's module loads only when it serves. Adding a transport:

1. write its module, holding an object that follows `ServerTransport` (subclass
   `BaseTransport`): ``serve(server, address, **options)`` serves until the peer or a signal
   ends it;
2. add its row to `TRANSPORTS`: the address scheme, the import string of that object, the
   `FLAGS` of ``mcpline run`` it takes (a new flag is one more `Flag` there) and an address
   form for help texts.

`Server.run` then serves the new addresses, and ``mcpline run --listen`` takes them with
their flags; a flag given for a transport whose row lacks it is a usage error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class ServerTransport(Protocol[S_contra]):
    """What a row's import string names: how one transport serves a server (``S_contra``:
    what it reads of one; a `mcpline.Server` is all of them)."""

    def serve(self, server: S_contra, address: str, **options: Any) -> None:
        """Serve ``server`` at ``address`` until done (`Server.run`); a failure to start is
        one ``mcpline: ...`` line on stderr and `SystemExit` 2."""

    def options(self, given: dict[str, Any], address: str) -> dict[str, Any]:
        """The ``serve`` options of the command-line flags ``given`` (by `Flag.option`,
        those of this row only); `ValueError` (a usage error) for bad ones."""

    def serve_file(
        self, target: str, address: str, load: Callable[[str], S_contra], **options: Any
    ) -> None:
        """``mcpline run``: import the server file ``target`` with ``load`` and serve it."""

    def shorthand(self, value: str) -> str:
        """The address that the row's shorthand flag ``value`` stands for (`ValueError`)."""


class BaseTransport(Generic[S]):
    """The defaults of `ServerTransport`: flags are options as given, ``serve_file`` loads
    and serves, and there is no shorthand."""

    def serve(self, server: S, address: str, **options: Any) -> None:
        raise NotImplementedError

    def options(self, given: dict[str, Any], address: str) -> dict[str, Any]:
        return dict(given)

    def serve_file(
        self, target: str, address: str, load: Callable[[str], S], **options: Any
    ) -> None:
        self.serve(load(target), address, **options)

    def shorthand(self, value: str) -> str:
        raise ValueError("this transport has no shorthand flag")


class Flag(msgspec.Struct, frozen=True):
    """A flag of ``mcpline run`` and the transport option it sets."""

    name: str
    """``--max-connections``."""
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    action: Literal["append", "store_true"] | None = None
    option: str | None = None
    """The option's name (default: the flag's, ``max_connections``)."""
    positive: bool = False
    """A value that is not above 0 is a usage error (``--N must be positive``)."""

    @property
    def dest(self) -> str:
        """The flag's argparse name: ``max_connections``."""
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def key(self) -> str:
        """The option it sets."""
        return self.option or self.dest


class Row(msgspec.Struct, frozen=True):
    """One transport: the addresses it serves and where it is."""

    scheme: str
    """What its addresses start with, before the first ``:`` (``stdio`` is all of one)."""
    target: str
    """``module:attribute`` of its `ServerTransport`."""
    form: str
    """Its address as help texts show it."""
    flags: tuple[str, ...] = ()
    """The `FLAGS` (by name) it takes."""
    shorthand: Flag | None = None
    """A flag that stands for ``--listen ADDRESS`` (``--http HOST:PORT``)."""

    def load(self) -> ServerTransport[Any]:
        """Import the transport."""
        module, _, name = self.target.partition(":")
        transport: ServerTransport[Any] = getattr(importlib.import_module(module), name)
        return transport


def _flags(*flags: Flag) -> dict[str, Flag]:
    return {flag.name: flag for flag in flags}


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
        "legacy 2025-11-25 sessions open at once; a new one ends only a session idle for 10 "
        "minutes, else 503 with Retry-After",
    ),
    (
        "--max-sessions-per-client",
        16,
        "legacy sessions of one client; past it the client's own least recently used idle "
        "session ends, else 429",
    ),
)
"""Per-client shares of HTTP: the flag, its default and what it bounds."""

FLAGS: dict[str, Flag] = _flags(
    Flag(
        "--workers",
        "N worker processes, each importing FILE (needs $MCPLINE_STATE_KEY)",
        metavar="N",
        type=int,
    ),
    Flag(
        "--allow-origin",
        "a browser origin to accept, e.g. http://localhost:6274 (repeatable)",
        metavar="ORIGIN",
        action="append",
        option="allowed_origins",
    ),
    Flag(
        "--allow-host",
        "a Host header name to accept besides loopback names (repeatable)",
        metavar="HOST",
        action="append",
        option="allowed_hosts",
    ),
    Flag(
        "--max-body-total",
        "request bodies held at once by all requests; past it a POST gets 503 with "
        "Retry-After before its body is read (default 64 MiB; see docs/security.md)",
        metavar="BYTES",
        type=int,
        option="max_body_total_bytes",
        positive=True,
    ),
    Flag(
        "--header-timeout",
        "a request's headers must arrive whole within this time, else 408 and close; "
        "also closes connections that send nothing (default 10)",
        metavar="SECONDS",
        type=float,
        positive=True,
    ),
    Flag(
        "--write-timeout",
        "a client that leaves the server's writes unread this long (its socket buffer "
        "full) has its connection closed and its request cancelled (default 30)",
        metavar="SECONDS",
        type=float,
        positive=True,
    ),
    Flag(
        "--max-outbound-total",
        "bytes waiting to be written to all clients together; past it the responses "
        "with the most queued end first (default 64 MiB; see docs/security.md)",
        metavar="BYTES",
        type=int,
        option="max_outbound_total_bytes",
        positive=True,
    ),
    *(
        Flag(
            flag,
            f"{what} (default {default}; see docs/security.md)",
            metavar="N",
            type=int,
            positive=True,
        )
        for flag, default, what in SHARE_FLAGS
    ),
    Flag(
        "--auth",
        "verify OAuth access tokens, e.g. jwks=URL,issuer=URL,audience=URL or "
        "introspection=URL,client_id=ID,issuer=URL (secret: $MCPLINE_AUTH_CLIENT_SECRET); "
        "serves the RFC 9728 metadata it implies (default: $MCPLINE_AUTH; see docs/auth.md)",
        metavar="SPEC",
    ),
    Flag(
        "--metrics",
        "serve Prometheus metrics at /metrics, behind the same checks and --auth as the "
        "endpoint (see docs/observability.md)",
        action="store_true",
    ),
    Flag(
        "--oauth-proxy",
        "serve an OAuth authorization server that signs users in at an identity provider, "
        "e.g. provider=github,client_id=ID or upstream=URL,client_id=ID (secret: "
        "$MCPLINE_OAUTH_PROXY_CLIENT_SECRET), and verify its tokens (default: "
        "$MCPLINE_OAUTH_PROXY; see docs/auth.md)",
        metavar="SPEC",
    ),
    Flag(
        "--token-file",
        "read the token from PATH (default: $MCPLINE_TOKEN, else a new random one)",
        metavar="PATH",
    ),
    Flag(
        "--no-auth",
        "accept clients without a token (any local user can call the server)",
        action="store_true",
    ),
    Flag(
        "--max-connections",
        "connections open at once; more are closed at once (default 64; "
        "503 and close, default 1024 or the open-file limit less 64)",
        metavar="N",
        type=int,
        positive=True,
    ),
    Flag(
        "--max-pending",
        "connections not yet authenticated at once; one more closes the oldest (default 16)",
        metavar="N",
        type=int,
        positive=True,
    ),
    Flag(
        "--auth-timeout",
        "close a connection that has not sent its first line (tcp: the token) "
        "within this time (default 5)",
        metavar="SECONDS",
        type=float,
        positive=True,
    ),
    Flag(
        "--idle-timeout",
        "close a connection idle this long, 0 for never (default 300; http: "
        "between requests, default 5, never 0)",
        metavar="SECONDS",
        type=float,
    ),
    Flag(
        "--max-line-bytes",
        "the longest accepted line (default 4 MiB, or the server's limit if smaller)",
        metavar="N",
        type=int,
        positive=True,
    ),
)
"""Every transport flag of ``mcpline run``; each row names those it takes."""

SOCKET_FLAGS = (
    "--max-connections",
    "--max-pending",
    "--auth-timeout",
    "--idle-timeout",
    "--max-line-bytes",
)
HTTP_FLAGS = (
    "--workers",
    "--allow-origin",
    "--allow-host",
    "--max-body-total",
    "--header-timeout",
    "--write-timeout",
    "--max-outbound-total",
    *(flag for flag, _, _ in SHARE_FLAGS),
    "--auth",
    "--oauth-proxy",
    "--metrics",
    "--max-connections",
    "--idle-timeout",
)

TRANSPORTS: dict[str, Row] = {
    row.scheme: row
    for row in (
        Row("stdio", "mcpline.transports.stdio:STDIO", "stdio"),
        Row("unix", "mcpline.transports.sockets:SOCKETS", "unix:/path/to.sock", SOCKET_FLAGS),
        Row(
            "tcp",
            "mcpline.transports.sockets:SOCKETS",
            "tcp:HOST:PORT",
            ("--token-file", "--no-auth", *SOCKET_FLAGS),
        ),
        Row(
            "http",
            "mcpline.transports.http.serve:HTTP",
            "http://HOST:PORT/mcp",
            HTTP_FLAGS,
            Flag(
                "--http",
                "serve MCP over HTTP at http://HOST:PORT/mcp (a bare PORT binds 127.0.0.1); "
                "the same as --listen http://HOST:PORT/mcp (needs mcpline[http]; see docs/http.md)",
                metavar="HOST:PORT",
            ),
        ),
    )
}
"""The server transports by scheme."""


def scheme_of(address: str) -> str:
    """The scheme of ``address``: what comes before its first ``:``."""
    return address.partition(":")[0]


def takers(flag: Flag) -> list[str]:
    """The schemes of the rows that take ``flag``."""
    return [row.scheme for row in TRANSPORTS.values() if flag.name in row.flags]


def row_for(address: str) -> Row:
    """The row serving ``address``; `ValueError` naming the forms served otherwise."""
    row = TRANSPORTS.get(scheme_of(address))
    if row is None:
        forms = ", ".join(row.form for row in TRANSPORTS.values())
        raise ValueError(f"bad address {address!r}: mcpline serves {forms}")
    return row


def transport_for(address: str) -> ServerTransport[Any]:
    """The transport serving ``address`` (imported); `ValueError` as `row_for`."""
    return row_for(address).load()


__all__ = [
    "BaseTransport",
    "Flag",
    "FLAGS",
    "Row",
    "row_for",
    "scheme_of",
    "ServerTransport",
    "SHARE_FLAGS",
    "takers",
    "transport_for",
    "TRANSPORTS",
]
