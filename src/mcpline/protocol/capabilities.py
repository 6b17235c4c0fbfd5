"""Client-capability checks shared by every handler."""

from __future__ import annotations

from typing import Any

from ..errors import MissingCapabilityError
from ..spec import TASKS_EXTENSION


def has_capability(caps: dict[str, Any], path: str) -> bool:
    """``path`` is dotted, e.g. ``"elicitation.url"``; each step must be an object."""
    node: Any = caps
    for part in path.split("."):
        if type(node) is not dict:
            return False
        node = node.get(part)
        if type(node) is not dict:
            return False
    return True


def has_flag(caps: dict[str, Any], path: str) -> bool:
    """Whether a server's capabilities set ``path`` (dotted, e.g. ``"resources.subscribe"``):
    every step but the last is an object, the last is ``true`` (or an object)."""
    *steps, last = path.split(".")
    node: Any = caps
    for part in steps:
        node = node.get(part) if type(node) is dict else None
    if type(node) is not dict:
        return False
    value = node.get(last)
    return value is True or type(value) is dict


def require_capability(caps: dict[str, Any], path: str) -> None:
    """Raise -32021 unless ``path`` is declared; the error names it as a ClientCapabilities
    object."""
    if has_capability(caps, path):
        return
    required: dict[str, Any] = {}
    node = required
    parts = path.split(".")
    for part in parts[:-1]:
        node[part] = {}
        node = node[part]
    node[parts[-1]] = {}
    raise MissingCapabilityError(required)


def accepts_tasks(caps: dict[str, Any]) -> bool:
    """Whether client capabilities declare the tasks extension (its name has dots, so
    `has_capability` cannot say)."""
    ext = caps.get("extensions")
    return type(ext) is dict and type(ext.get(TASKS_EXTENSION)) is dict


__all__ = [
    "accepts_tasks",
    "has_capability",
    "has_flag",
    "require_capability",
]
