"""MCP over Streamable HTTP: an ASGI 3 application (``server.http_app()``) serving the
2026-07-28 binding and legacy 2025-11-25 sessions on one endpoint. See ``docs/http.md``."""

from __future__ import annotations

from .app import HttpApp

__all__ = ["HttpApp"]
