"""Required OAuth scopes per tool, prompt and resource (``@server.tool(scopes=[...])``).

One place decides: `ScopeRules.missing`. The HTTP app asks it before serving a
``tools/call``, ``prompts/get`` or ``resources/read`` from a caller whose token it verified,
and answers 403 ``insufficient_scope`` naming the scopes the operation needs; listings show
such a caller only what it may call. Without a verified principal (stdio, sockets, HTTP
without ``verify_token``) scopes do not apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

Kind = Literal["tool", "prompt", "resource"]
NONE: frozenset[str] = frozenset()


def check_scopes(scopes: Iterable[str] | None) -> frozenset[str]:
    """The scopes a registration asks for; `ValueError` for text that is no scope token."""
    if scopes is None:
        return NONE
    if isinstance(scopes, str):
        raise ValueError("scopes must be a list of scope names, not one string")
    found = frozenset(scopes)
    for scope in found:
        if not isinstance(scope, str) or not scope or any(c in scope for c in ' "\\'):
            raise ValueError(f"{scope!r} is not a scope (RFC 6749 section 3.3)")
    return found


class ScopeRules:
    """The scopes each tool, prompt and resource (by URI or template text) requires."""

    def __init__(self) -> None:
        self._rules: dict[tuple[Kind, str], frozenset[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._rules)

    def set(self, kind: Kind, name: str, scopes: Iterable[str] | None) -> None:
        required = check_scopes(scopes)
        if required:
            self._rules[(kind, name)] = required
        else:
            self._rules.pop((kind, name), None)

    def required(self, kind: Kind, name: str) -> frozenset[str]:
        return self._rules.get((kind, name), NONE)

    def missing(self, principal: Any, kind: Kind, name: str) -> frozenset[str]:
        """The required scopes ``principal`` lacks (none for a caller without a principal)."""
        required = self._rules.get((kind, name))
        if not required or principal is None:
            return NONE
        from .auth.tokens import scopes_of  # only a server that authenticates gets here

        return required - scopes_of(principal)

    def allows(self, principal: Any, kind: Kind, name: str) -> bool:
        return not self.missing(principal, kind, name)


__all__ = ["check_scopes", "Kind", "ScopeRules"]
