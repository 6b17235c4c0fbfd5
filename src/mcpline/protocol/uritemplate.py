"""RFC 6570 URI templates (all four levels): expansion, and matching a URI back to values.

Sans-I/O. `UriTemplate(text)` parses once (``ValueError`` for a malformed template);
`expand(values)` follows the RFC exactly; `match(uri)` is its best-effort inverse: it returns
the variables' pct-decoded values (``str``, or ``list[str]`` for exploded variables), or
``None`` when the URI cannot have come from the template or a value would hold a control
character (so a server answers such a URI "not found" without calling the handler).
Matching is necessarily partial — expansion loses information (a list and a comma-joined
string expand alike) — so values come back as text and typing them is the caller's business.
`match` takes time linear in the URI's length for any template (no backtracking), so an
untrusted URI cannot stall it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._urimatch import Matcher
from ._uriparse import Expression, Part, VarSpec, encode, expand_expression, is_template, parse

__all__ = ["Expression", "Part", "UriTemplate", "VarSpec", "expand", "is_template"]


class UriTemplate:
    """A parsed RFC 6570 template. ``str(t)`` is the original text."""

    __slots__ = ("text", "parts", "variables", "_matcher")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError("a URI template is a string")
        self.text = text
        self.parts: tuple[Part, ...] = tuple(parse(text))
        names: list[str] = []
        for part in self.parts:
            if isinstance(part, Expression):
                for spec in part.variables:
                    if spec.name not in names:
                        names.append(spec.name)
        self.variables: tuple[str, ...] = tuple(names)
        """Variable names in order of first appearance."""
        self._matcher = Matcher(text, self.parts)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"UriTemplate({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def is_template(self) -> bool:
        return any(isinstance(p, Expression) for p in self.parts)

    def expand(self, values: Mapping[str, Any] | None = None, **kw: Any) -> str:
        """The URI for ``values`` (``str``/numbers, lists, or mappings; ``None`` = undefined)."""
        vals: dict[str, Any] = dict(values or {})
        vals.update(kw)
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(encode(part, True))
            else:
                out.append(expand_expression(part, vals))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables ``uri`` binds, or ``None`` when it does not fit the template, or
        when a value, once pct-decoded, would contain a control character (U+0000 to U+001F,
        U+007F: ``%00`` cuts paths and C strings short, ``%0A`` forges log lines).

        Runs in time linear in ``len(uri)`` for a given template (a few big-integer
        operations on ``len(uri)``-bit numbers per template node, times ``log2(len(uri))``
        for ``{;x}``, ``{.x*}``, ``{/x*}`` and ``{;x*}``), whatever the URI. When several
        splits fit, variables are bound left to right, each taking the longest text that lets
        the rest match (``{+var}`` and ``{#var}``: the shortest); a URI is only split between
        pct-triplets.
        """
        return self._matcher.match(uri)


def expand(template: str, values: Mapping[str, Any] | None = None, **kw: Any) -> str:
    """Expand ``template`` once (parse + expand)."""
    return UriTemplate(template).expand(values, **kw)
