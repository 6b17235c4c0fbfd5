"""Who may talk to a socket listener: the first-bytes gate and the listener's TCP token.

`Gate` is sans-I/O: the transport feeds it the first bytes of a connection and it decides
whether they may reach the server. A TCP client proves that it may by sending, as its first
line, the `AUTH_METHOD` notification with the listener's token; the listener writes the
token to a 0600 file in a 0700 per-user directory (`mcpline.addresses.token_path`), where
only the same user's clients read it.
"""

from __future__ import annotations

import contextlib
import enum
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

from .._platform import owned_by_current_user
from ..addresses import AUTH_METHOD, os_reason, token_dir, token_path

MAX_FIRST_LINE = 4096
"""How many bytes a connection may send before the gate decides (an auth line is ~100)."""

_WHITESPACE = b" \t\r\n"


class Verdict(enum.Enum):
    WAIT = "wait"
    OPEN = "open"
    REJECT = "reject"


class Gate:
    """Decides from its first bytes whether a connection is let through to the server.

    The first non-whitespace byte must be ``{`` (so an HTTP request, a TLS handshake or any
    other protocol is refused before anything runs). With a ``token``, the first line must
    also be the `AUTH_METHOD` notification carrying that token; the line itself is consumed.
    """

    __slots__ = ("_token", "_buf", "verdict", "reason")

    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token is not None else None
        self._buf = b""
        self.verdict = Verdict.WAIT
        self.reason = ""

    def feed(self, data: bytes) -> bytes:
        """Take received bytes; return those to hand to the server (only once `OPEN`)."""
        if self.verdict is Verdict.OPEN:
            return data
        if self.verdict is Verdict.REJECT:
            return b""
        buf = self._buf + data
        body = buf.lstrip(_WHITESPACE)
        if not body:
            return self._wait(buf, "only whitespace")
        if body[:1] != b"{":
            return self._reject(f"not JSON-RPC (it starts with {body[:16]!r})")
        if self._token is None:
            return self._open(buf)
        end = body.find(b"\n")
        if end < 0:
            return self._wait(buf, "a first line too long to be the authenticate notification")
        why = self._check(body[:end])
        if why:
            return self._reject(why)
        return self._open(body[end + 1 :])

    def _wait(self, buf: bytes, too_long: str) -> bytes:
        if len(buf) > MAX_FIRST_LINE:
            return self._reject(f"{too_long} ({len(buf)} bytes)")
        self._buf = buf
        return b""

    def _open(self, rest: bytes) -> bytes:
        self.verdict = Verdict.OPEN
        self._buf = b""
        return rest

    def _reject(self, why: str) -> bytes:
        self.verdict = Verdict.REJECT
        self.reason = why
        self._buf = b""
        return b""

    def _check(self, line: bytes) -> str:
        """Why ``line`` is not the authenticate notification with our token ('' if it is)."""
        assert self._token is not None
        try:
            msg = json.loads(line)
        except ValueError:
            return "the first line is not JSON"
        if (
            not isinstance(msg, dict)
            or msg.get("jsonrpc") != "2.0"
            or msg.get("method") != AUTH_METHOD
            or "id" in msg
        ):
            return f"the first message is not the {AUTH_METHOD} notification"
        params = msg.get("params")
        token = params.get("token") if isinstance(params, dict) else None
        if not isinstance(token, str):
            return "the authenticate notification has no token"
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self._token):
            return "wrong token"
        return ""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_token_file(host: str, port: int, token: str) -> Path:
    """Store ``token`` as the default token file of ``host:port``: a new 0600 file in a 0700
    directory owned by the current user. A file left there by a dead listener is replaced
    (the caller has bound the port, so no live listener owns it)."""
    directory = token_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or not owned_by_current_user(st):
            raise ValueError(f"{directory} is not a directory owned by the current user")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(directory, 0o700)
        path = token_path(host, port)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
    except OSError as exc:
        raise ValueError(f"cannot write the token file in {directory}: {os_reason(exc)}") from None
    return path


__all__ = [
    "Gate",
    "MAX_FIRST_LINE",
    "new_token",
    "Verdict",
    "write_token_file",
]
