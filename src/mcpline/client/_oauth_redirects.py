"""The user's side of `mcpline.client.oauth.OAuth`: showing the authorization URL and
getting back where the authorization server redirected (``on_authorize``)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from urllib.parse import urlsplit, urlunsplit

from ..errors import AuthError


async def fetch_redirect(url: str, redirect_uri: str) -> str:
    """Request the authorization URL and return where it redirects (no browser, no user):
    for authorization servers that consent at once, as test servers do."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=False, timeout=30.0) as http:
        for _ in range(10):
            response = await http.get(url)
            location = response.headers.get("location")
            if response.status_code not in (301, 302, 303, 307, 308) or location is None:
                raise AuthError(
                    f"the authorization endpoint answered HTTP {response.status_code} "
                    "without redirecting back"
                )
            url = str(response.url.join(location))
            if url.startswith(redirect_uri.split("?")[0]):
                return url
    raise AuthError("the authorization endpoint redirected too many times")


async def browser_redirect(url: str, redirect_uri: str, *, timeout: float = 300.0) -> str:
    """Open ``url`` in a browser (and show it on stderr, stdout being the command's output)
    and wait (at most ``timeout`` seconds) for the one request to ``redirect_uri``, a
    loopback address this listens on."""
    import webbrowser

    parts = urlsplit(redirect_uri)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1") or parts.port is None:
        raise AuthError("browser_redirect needs a loopback redirect_uri with a port")
    got: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10.0)
            parts_ = line.decode("latin-1").split(" ")
            target = parts_[1] if len(parts_) >= 2 else ""
            if urlsplit(target).path == parts.path and not got.done():
                got.set_result(urlunsplit((parts.scheme, parts.netloc, *urlsplit(target)[2:])))
                body = b"Authorization complete: you can close this window."
                status = b"200 OK"
            else:
                body, status = b"Not found", b"404 Not Found"
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: text/plain\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, parts.hostname, parts.port)
    try:
        print(f"Open this URL to authorize: {url}", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            webbrowser.open(url)
        try:
            return await asyncio.wait_for(got, timeout)
        except asyncio.TimeoutError:
            raise AuthError(f"no authorization within {timeout:g}s") from None
    finally:
        server.close()
        await server.wait_closed()


def loopback_redirect_uri(path: str = "/callback") -> str:
    """A redirect URI on a free loopback port (RFC 8252, section 7.3)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


__all__ = ["browser_redirect", "fetch_redirect", "loopback_redirect_uri"]
