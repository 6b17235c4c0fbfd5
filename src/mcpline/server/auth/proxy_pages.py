"""The OAuth proxy's two HTML pages: the consent form and the error page. Every value shown
is escaped; the pages load nothing, may not be framed, and are not cached."""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

PAGE_HEADERS = (
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"pragma", b"no-cache"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}"
    "code{word-break:break-all}button{font-size:1em;padding:.4em 1.2em;margin-right:1em}"
)


def _page(title: str, body: str) -> bytes:
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    ).encode()


def consent_page(
    *,
    action: str,
    transaction: str,
    csrf: str,
    client_name: str,
    client_id: str,
    redirect_uri: str,
    scopes: list[str],
    resource: str,
    provider: str,
) -> bytes:
    """The form asking the signed-in user to let ``client_name`` act for them at
    ``resource``; it posts ``transaction``, ``csrf`` and ``decision`` to ``action``."""
    shown = client_name or client_id
    parts = urlsplit(redirect_uri)
    host = parts.netloc or redirect_uri
    local = (
        "<p><strong>This application runs on a computer, not a web site</strong> (it receives "
        "the answer at a local address): nothing vouches for its name.</p>"
        if parts.hostname in ("127.0.0.1", "::1", "localhost") or not parts.netloc
        else ""
    )
    items = "".join(f"<li><code>{escape(s)}</code></li>" for s in scopes) or "<li>(none)</li>"
    body = (
        f"<h1>Allow {escape(shown)}?</h1>"
        f"<p>The application <strong>{escape(shown)}</strong> "
        f"(client id <code>{escape(client_id)}</code>) asks to use "
        f"<code>{escape(resource)}</code> on your behalf.</p>"
        f"<p>Scopes:</p><ul>{items}</ul>"
        f"<p>After you sign in with {escape(provider)}, you will be sent to "
        f"<code>{escape(host)}</code> (<code>{escape(redirect_uri)}</code>). "
        "Allow only an application you started yourself.</p>"
        f"{local}"
        f'<form method=post action="{escape(action)}">'
        f'<input type=hidden name=transaction value="{escape(transaction)}">'
        f'<input type=hidden name=csrf value="{escape(csrf)}">'
        "<button type=submit name=decision value=approve>Allow</button>"
        "<button type=submit name=decision value=deny>Deny</button>"
        "</form>"
    )
    return _page(f"Allow {shown}?", body)


def error_page(title: str, description: str) -> bytes:
    """A refusal shown to the user (when redirecting back to the client is not safe)."""
    return _page(title, f"<h1>{escape(title)}</h1><p>{escape(description)}</p>")


__all__ = ["consent_page", "error_page", "PAGE_HEADERS"]
