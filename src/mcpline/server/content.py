"""Content blocks and tool results, as plain JSON-ready dicts."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _extra(
    block: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None
) -> dict[str, Any]:
    if annotations:
        block["annotations"] = annotations
    if meta:
        block["_meta"] = meta
    return block


def text(
    value: str, *, annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A text content block."""
    return _extra({"type": "text", "text": value}, annotations, meta)


def image(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An image block; ``data`` is raw bytes or already base64-encoded text."""
    return _extra({"type": "image", "data": _b64(data), "mimeType": mime_type}, annotations, meta)


def audio(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An audio block; ``data`` is raw bytes or already base64-encoded text."""
    return _extra({"type": "audio", "data": _b64(data), "mimeType": mime_type}, annotations, meta)


def resource_link(
    uri: str,
    name: str,
    *,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A link to a resource the client may read."""
    block: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": name}
    for key, value in (
        ("title", title),
        ("description", description),
        ("mimeType", mime_type),
        ("size", size),
    ):
        if value is not None:
            block[key] = value
    return _extra(block, annotations, meta)


def embedded_text(
    uri: str,
    value: str,
    mime_type: str | None = "text/plain",
    *,
    annotations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An embedded text resource."""
    res: dict[str, Any] = {"uri": uri, "text": value}
    if mime_type:
        res["mimeType"] = mime_type
    return _extra({"type": "resource", "resource": res}, annotations, None)


def embedded_blob(
    uri: str,
    data: bytes | str,
    mime_type: str | None = None,
    *,
    annotations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An embedded binary resource (base64 ``blob``)."""
    res: dict[str, Any] = {"uri": uri, "blob": _b64(data)}
    if mime_type:
        res["mimeType"] = mime_type
    return _extra({"type": "resource", "resource": res}, annotations, None)


CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


def is_content_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


@dataclass
class ToolResult:
    """A complete `CallToolResult`, for tools that want full control over what they return."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": list(self.content)}
        if self.structured_content is not None:
            out["structuredContent"] = self.structured_content
        if self.is_error:
            out["isError"] = True
        if self.meta:
            out["_meta"] = dict(self.meta)
        return out


__all__ = [
    "audio",
    "CONTENT_TYPES",
    "embedded_blob",
    "embedded_text",
    "image",
    "is_content_block",
    "resource_link",
    "text",
    "ToolResult",
]
