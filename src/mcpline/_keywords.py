"""`check_keywords`: the run-time half of options declared as a `TypedDict` and taken as
``**options: Unpack[...]`` (type checkers do the other half)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_keywords(declared: Any, given: Mapping[str, Any], where: str) -> None:
    """`TypeError`, as for a misspelt keyword, when ``given`` holds a name that the
    `TypedDict` ``declared`` lacks."""
    known = declared.__required_keys__ | declared.__optional_keys__
    unknown = sorted(set(given) - known)
    if unknown:
        raise TypeError(f"{where} got unexpected keyword arguments: {', '.join(unknown)}")


__all__ = ["check_keywords"]
