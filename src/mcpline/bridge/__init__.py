"""Bridges between the transports: a stdio MCP server served over Streamable HTTP, and an
HTTP one served over stdio, each era on either side (see docs/bridge.md).

`child` and `remote` make the `Backend` (the upstreams and the eras that forward to them);
`serve_http` and `serve_stdio` serve it with mcpline's own transports. ``mcpline bridge`` is
the command line.
"""

from __future__ import annotations

from .backend import Backend, BackendOptions
from .run import child, remote, serve_http, serve_stdio

__all__ = ["Backend", "BackendOptions", "child", "remote", "serve_http", "serve_stdio"]
