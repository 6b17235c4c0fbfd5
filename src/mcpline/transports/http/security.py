"""Who may talk to the HTTP endpoint: Origin and Host checks, bearer tokens, RFC 9728.

DNS rebinding is what these checks stop: a web page on a hostile site whose name resolves
to 127.0.0.1 makes the browser send requests to a local server. Such a request carries the
page's ``Origin`` and the hostile name as ``Host``. So an ``Origin`` is accepted only when
it is listed, or is the endpoint's own origin on a loopback bind; and on a loopback bind the
``Host`` must be a loopback name (or listed).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from ...addresses import canonical_host, is_loopback

TokenVerifier = Callable[[str], Any]
"""``verify_token(token) -> principal | None`` (or a coroutine function): None refuses."""

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MEMO_ENTRIES = 256
"""How many (Host, bound address) verdicts a `Gatekeeper` remembers."""


def split_host(value: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 in brackets) → (canonical host, port or None); ("", None) if
    unreadable."""
    text = value.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return "", None
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(":"):
            return "", None
        port_text = rest[1:]
    else:
        host, _, port_text = text.partition(":")
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        return "", None
    return canonical_host(host), int(port_text) if port_text else None


class Gatekeeper:
    """The Origin and Host policy of one endpoint.

    ``allowed_origins`` are exact origins (``"http://localhost:6274"``) or ``"*"`` for any;
    ``allowed_hosts`` are host names (any port) that may appear in ``Host`` besides the
    loopback names, which are always accepted on a loopback bind.
    """

    def __init__(self, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()):
        self.any_origin = False
        self.origins: set[str] = set()
        for origin in allowed_origins:
            if origin == "*":
                self.any_origin = True
            else:
                self.origins.add(origin.rstrip("/").lower())
        self.hosts = {canonical_host(h) for h in allowed_hosts}
        self._host_verdicts: dict[tuple[str | None, tuple[str, int] | None], bool] = {}
        """`host_allowed` answers by (Host, bound address): clients repeat one ``Host``, and
        parsing it costs more than the rest of a small request's checks."""

    def origin_allowed(self, origin: str, bound: tuple[str, int] | None) -> bool:
        """Whether a request with this ``Origin`` may be served (the spec's 403 otherwise)."""
        if self.any_origin:
            return True
        if origin.rstrip("/").lower() in self.origins:
            return True
        if bound is None or not is_loopback(bound[0]):
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        return is_loopback(parts.hostname) and port == bound[1]

    def host_allowed(self, host: str | None, bound: tuple[str, int] | None) -> bool:
        """Whether the ``Host`` header fits. On a loopback bind it must be a loopback name or
        a listed host; elsewhere any host, unless hosts are listed."""
        verdicts = self._host_verdicts
        key = (host, bound)
        verdict = verdicts.get(key)
        if verdict is None:
            if len(verdicts) >= MEMO_ENTRIES:  # bounded: Host is the client's to choose
                verdicts.clear()
            verdict = verdicts[key] = self._host_allowed(host, bound)
        return verdict

    def _host_allowed(self, host: str | None, bound: tuple[str, int] | None) -> bool:
        loopback = bound is not None and is_loopback(bound[0])
        if not loopback and not self.hosts:
            return True
        name = split_host(host)[0] if host is not None else ""
        if not name:
            return False
        return name in self.hosts or (loopback and is_loopback(name))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value, else None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


async def verify(verifier: TokenVerifier, token: str) -> Any:
    """The principal for ``token`` (None when refused); a verifier that raises refuses."""
    result = verifier(token)
    if inspect.isawaitable(result):
        result = await result
    return result


def metadata_url(resource: str) -> str:
    """Where RFC 9728 puts the metadata of ``resource``: the well-known path inserted between
    its origin and its path (``https://h/mcp`` → ``https://h/.well-known/…/mcp``)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


def challenge(
    resource_metadata: dict[str, Any] | None,
    error: str | None = None,
    *,
    scheme: str = "Bearer",
    description: str | None = None,
    scope: Iterable[str] = (),
    algs: Iterable[str] = (),
) -> str:
    """A ``WWW-Authenticate`` value: the scheme, the error if any with its description, the
    ``scope`` an operation needs, the metadata URL, and (for DPoP) the proof ``algs``."""
    parts = []
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{_quoted(description)}"')
    wanted = " ".join(sorted(scope))
    if wanted:
        parts.append(f'scope="{_quoted(wanted)}"')
    if resource_metadata is not None:
        parts.append(f'resource_metadata="{metadata_url(resource_metadata["resource"])}"')
    offered = " ".join(algs)
    if offered:
        parts.append(f'algs="{offered}"')
    return scheme + (" " + ", ".join(parts) if parts else "")


def _quoted(text: str) -> str:
    """``text`` fit for a quoted-string: no quotes nor backslashes, printable latin-1."""
    cleaned = text.replace("\\", "").replace('"', "'")
    return cleaned.encode("latin-1", "replace").decode("latin-1")


def check_metadata(document: dict[str, Any]) -> dict[str, Any]:
    """A protected-resource metadata document, checked (`ValueError` naming what is wrong)."""
    resource = document.get("resource")
    if not isinstance(resource, str) or urlsplit(resource).scheme not in ("http", "https"):
        raise ValueError("resource_metadata needs 'resource': the endpoint's absolute URL")
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise ValueError(
            "resource_metadata needs 'authorization_servers': a non-empty list of issuer URLs"
        )
    return dict(document)


__all__ = [
    "bearer_token",
    "challenge",
    "check_metadata",
    "Gatekeeper",
    "metadata_url",
    "split_host",
    "TokenVerifier",
    "verify",
    "WELL_KNOWN",
]
