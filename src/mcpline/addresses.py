"""Where a socket server listens and how a client proves it may talk to it, shared by the
listener (`mcpline.transports.sockets`) and the client (`mcpline.client.socket`):
``unix:/path`` and ``tcp:HOST:PORT`` addresses, and the TCP token (the authenticate line,
``$MCPLINE_TOKEN`` and the per-user token files). Pure helpers: nothing here listens or
connects.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Address:
    """A parsed ``unix:/path`` or ``tcp:HOST:PORT``."""

    kind: str
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix:{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp:{host}:{self.port}"


ENDPOINT_HINT = "an MCP server over HTTP is usually at http(s)://HOST:PORT/mcp"
ADDRESS_FORMS = "unix:/path, tcp:HOST:PORT or http(s)://HOST:PORT/mcp"
"""The addresses a client connects to (and `mcpline run --listen` serves)."""


def parse_address(text: str) -> Address:
    """``unix:/path/to.sock`` or ``tcp:HOST:PORT`` (IPv6 hosts in brackets), or ValueError."""
    kind, sep, rest = text.partition(":")
    if not sep or not rest:
        raise ValueError(f"bad address {text!r}: expected {ADDRESS_FORMS}")
    if kind == "unix":
        return Address("unix", path=rest)
    if kind == "tcp":
        host, sep, port_text = rest.rpartition(":")
        if (
            not sep
            or not host
            or not (port_text.isascii() and port_text.isdigit())  # not "٣" or "²"
            or int(port_text) > 65535
        ):
            raise ValueError(
                f"bad address {text!r}: expected tcp:HOST:PORT (addresses are {ADDRESS_FORMS})"
            )
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return Address("tcp", host=host, port=int(port_text))
    raise ValueError(f"bad address {text!r}: expected {ADDRESS_FORMS}")


def canonical_host(host: str) -> str:
    """``host`` spelled one way: no brackets, lower case, no trailing dot, and an IP address
    in its standard form (``127.1`` and ``0177.0.0.1`` read as `socket.inet_aton` does)."""
    name = host.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        name = name.lower().rstrip(".") or name
    if _INET_ATON.fullmatch(name) and any(c.isdigit() for c in name):
        with contextlib.suppress(OSError):
            return socket.inet_ntoa(socket.inet_aton(name))
    return name


_INET_ATON = re.compile(r"[0-9a-fx.]+")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (in any spelling) names this machine's loopback interface."""
    name = canonical_host(host)
    if name == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


# --- tokens ---------------------------------------------------------------------------------

AUTH_METHOD = "notifications/mcpline/authenticate"
"""The first message a TCP client sends: ``{"params": {"token": "..."}}``, no ``id``."""

TOKEN_ENV = "MCPLINE_TOKEN"
"""The environment variable that gives a token to `mcpline run` and to the client."""

MIN_TOKEN_CHARS = 16


def auth_line(token: str) -> bytes:
    """The first line a client sends to a TCP listener whose token is ``token``."""
    msg = {"jsonrpc": "2.0", "method": AUTH_METHOD, "params": {"token": token}}
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def check_token(token: str, source: str) -> str:
    """``token`` without surrounding whitespace, or ValueError naming ``source``."""
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or not token.isascii():
        raise ValueError(
            f"the token from {source} must be at least {MIN_TOKEN_CHARS} printable ASCII characters"
        )
    return token


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token stored in ``path``, or ValueError with a one-line reason."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token file {path}: {os_reason(exc)}") from None
    return check_token(text, str(path))


def token_dir() -> Path:
    """Where listeners keep their token files: ``$XDG_RUNTIME_DIR/mcpline``, else
    ``$XDG_CACHE_HOME/mcpline`` (default ``~/.cache/mcpline``)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / "mcpline"
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return base / "mcpline"


def token_path(host: str, port: int) -> Path:
    """The default token file of the TCP listener bound to ``host`` (canonical) and ``port``."""
    return token_dir() / f"tcp-{host}-{port}.token"


def find_token(host: str, port: int, hosts: tuple[str, ...] = ()) -> str | None:
    """The client's token for ``host:port``: `TOKEN_ENV`, then the default token file of
    ``host`` or of one of ``hosts`` (other names of the same host) at ``port``."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return check_token(env, f"${TOKEN_ENV}")
    for name in (host, *hosts):
        path = token_path(name, port)
        if path.is_file():
            return read_token_file(path)
    return None


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says that nothing listens at the
    address: the connection was refused, or the socket file does not exist."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (ConnectionRefusedError, FileNotFoundError)):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def os_reason(exc: BaseException) -> str:
    """What went wrong, in the OS's words when ``exc`` is an `OSError` that has them."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


__all__ = [
    "ADDRESS_FORMS",
    "AUTH_METHOD",
    "ENDPOINT_HINT",
    "LOOPBACK_NAMES",
    "MIN_TOKEN_CHARS",
    "TOKEN_ENV",
    "Address",
    "auth_line",
    "canonical_host",
    "check_token",
    "find_token",
    "is_loopback",
    "parse_address",
    "read_token_file",
    "refused",
    "token_dir",
    "token_path",
]
