"""Content blocks and tool results, as plain JSON-ready dicts.

A tool that returns content blocks says so with ``-> ContentBlock`` (or
``list[ContentBlock]``): a tool annotated ``-> dict`` returns structured data instead.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Annotated, Any


class _Content:
    """The mark of `ContentBlock` in an annotation."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "content"


CONTENT = _Content()

ContentBlock = Annotated[dict[str, Any], CONTENT]
"""A content block (``text``, ``image``, ``audio``, ``resource_link``, ``resource``): a plain
``dict``, marked so that ``-> ContentBlock`` means content where ``-> dict`` means data."""


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _extra(
    block: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None
) -> ContentBlock:
    if annotations:
        block["annotations"] = annotations
    if meta:
        block["_meta"] = meta
    return block


def text(
    value: str, *, annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
) -> ContentBlock:
    """A text content block."""
    return _extra({"type": "text", "text": value}, annotations, meta)


def image(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> ContentBlock:
    """An image block; ``data`` is raw bytes or already base64-encoded text."""
    return _extra({"type": "image", "data": _b64(data), "mimeType": mime_type}, annotations, meta)


def audio(
    data: bytes | str,
    mime_type: str,
    *,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> ContentBlock:
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
) -> ContentBlock:
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
) -> ContentBlock:
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
) -> ContentBlock:
    """An embedded binary resource (base64 ``blob``)."""
    res: dict[str, Any] = {"uri": uri, "blob": _b64(data)}
    if mime_type:
        res["mimeType"] = mime_type
    return _extra({"type": "resource", "resource": res}, annotations, None)


CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})
_BLOCK_KEYS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}


def is_content_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in CONTENT_TYPES


def looks_like_content(value: Any) -> bool:
    """Whether ``value`` is a complete content block (its type and that type's required
    keys), or a non-empty list of them: what the helpers here build."""
    if isinstance(value, list):
        return bool(value) and all(looks_like_content(v) for v in value)
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    keys = _BLOCK_KEYS.get(kind) if isinstance(kind, str) else None
    return keys is not None and all(k in value for k in keys)


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
    "CONTENT",
    "ContentBlock",
    "CONTENT_TYPES",
    "embedded_blob",
    "embedded_text",
    "image",
    "is_content_block",
    "looks_like_content",
    "resource_link",
    "text",
    "ToolResult",
]
