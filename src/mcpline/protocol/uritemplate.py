"""RFC 6570 URI templates (all four levels): expansion, and matching a URI back to values.

Sans-I/O. `UriTemplate(text)` parses once (``ValueError`` for a malformed template);
`expand(values)` follows the RFC exactly; `match(uri)` is its best-effort inverse: it returns
the variables' pct-decoded values (``str``, or ``list[str]`` for exploded variables), or
``None`` when the URI cannot have come from the template. Matching is necessarily partial —
expansion loses information (a list and a comma-joined string expand alike) — so values come
back as text and typing them is the caller's business.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

__all__ = ["UriTemplate", "expand", "is_template"]

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
_MAX_PREFIX = 9999


@dataclass(frozen=True)
class _Op:
    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool


_OPS: dict[str, _Op] = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    "#": _Op("#", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
}
_RESERVED_OPS = "=,!@|"


@dataclass(frozen=True)
class VarSpec:
    name: str
    explode: bool = False
    prefix: int | None = None


@dataclass(frozen=True)
class Expression:
    operator: str
    variables: tuple[VarSpec, ...]


Part = str | Expression


def is_template(text: str) -> bool:
    """Whether ``text`` contains at least one ``{expression}``."""
    return "{" in text


def _encode(value: str, allow_reserved: bool) -> str:
    """Pct-encode ``value``: unreserved characters always pass; with ``allow_reserved``,
    reserved characters and existing pct-triplets pass too."""
    out: list[str] = []
    i = 0
    n = len(value)
    while i < n:
        ch = value[i]
        if ch in _UNRESERVED or (allow_reserved and ch in _RESERVED):
            out.append(ch)
        elif allow_reserved and ch == "%" and _PCT.match(value, i):
            out.append(value[i : i + 3])
            i += 3
            continue
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse(template: str) -> list[Part]:
    parts: list[Part] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        close = template.find("}", i)
        if close != -1 and (start == -1 or close < start):
            raise ValueError(f"unmatched '}}' at {close} in URI template {template!r}")
        if start == -1:
            parts.append(template[i:])
            break
        if start > i:
            parts.append(template[i:start])
        end = template.find("}", start)
        if end == -1:
            raise ValueError(f"unclosed '{{' at {start} in URI template {template!r}")
        parts.append(_parse_expression(template[start + 1 : end], template))
        i = end + 1
    for lit in parts:
        if isinstance(lit, str) and any(c.isspace() or c in '"<>\\^`{|}' for c in lit):
            raise ValueError(f"invalid literal {lit!r} in URI template {template!r}")
    return parts


def _parse_expression(body: str, template: str) -> Expression:
    if not body:
        raise ValueError(f"empty expression in URI template {template!r}")
    op = ""
    if body[0] in _OPS and body[0] != "":
        op, body = body[0], body[1:]
    elif body[0] in _RESERVED_OPS:
        raise ValueError(f"operator {body[0]!r} is reserved in URI template {template!r}")
    specs: list[VarSpec] = []
    for raw in body.split(","):
        explode = raw.endswith("*")
        name = raw[:-1] if explode else raw
        prefix: int | None = None
        if ":" in name and not explode:
            name, _, digits = name.partition(":")
            if not digits.isdigit() or digits.startswith("0") or not 0 < int(digits) <= _MAX_PREFIX:
                raise ValueError(f"invalid prefix {raw!r} in URI template {template!r}")
            prefix = int(digits)
        if not _VARNAME.fullmatch(name):
            raise ValueError(f"invalid variable name {name!r} in URI template {template!r}")
        specs.append(VarSpec(name, explode, prefix))
    return Expression(op, tuple(specs))


def _defined(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, (list, tuple, Mapping)):
        return len(value) > 0
    return True


def _expand_expression(expr: Expression, values: Mapping[str, Any]) -> str:
    op = _OPS[expr.operator]
    pieces: list[str] = []
    for spec in expr.variables:
        value = values.get(spec.name)
        if not _defined(value):
            continue
        if isinstance(value, Mapping):
            items: list[tuple[str, str]] = [(_scalar(k), _scalar(v)) for k, v in value.items()]
        elif isinstance(value, (list, tuple)):
            items = [("", _scalar(v)) for v in value]
        else:
            items = []
        if not items:  # a scalar
            text = _scalar(value)
            if spec.prefix is not None:
                text = text[: spec.prefix]
            enc = _encode(text, op.reserved)
            if op.named:
                pieces.append(spec.name + ("=" + enc if enc else op.ifemp))
            else:
                pieces.append(enc)
            continue
        if spec.prefix is not None:
            raise ValueError(f"prefix modifier on composite variable {spec.name!r}")
        is_map = isinstance(value, Mapping)
        if not spec.explode:
            if is_map:
                joined = ",".join(
                    f"{_encode(k, op.reserved)},{_encode(v, op.reserved)}" for k, v in items
                )
            else:
                joined = ",".join(_encode(v, op.reserved) for _, v in items)
            if op.named:
                pieces.append(spec.name + ("=" + joined if joined else op.ifemp))
            else:
                pieces.append(joined)
            continue
        exploded: list[str] = []
        for k, v in items:
            enc = _encode(v, op.reserved)
            if is_map:
                exploded.append(f"{_encode(k, op.reserved)}={enc}")
            elif op.named:
                exploded.append(spec.name + ("=" + enc if enc else op.ifemp))
            else:
                exploded.append(enc)
        pieces.append(op.sep.join(exploded))
    if not pieces:
        return ""
    return op.first + op.sep.join(pieces)


# --- matching ---------------------------------------------------------------------------------

# One character of a value inside each operator's expansion (and, for an expression with a
# single variable, the looser class that may also contain the separator).
_CHAR = {
    "": r"[^/?#,]",
    "+": r"[^,]",
    "#": r"[^,]",
    ".": r"[^/?#.,]",
    "/": r"[^/?#,]",
    ";": r"[^/?#;,]",
}
_SINGLE_CHAR = {"": r"[^/?#]", "+": r".", "#": r"."}
_LAZY = frozenset("+#")


def _value_class(op: str, single: bool, prefix: int | None = None) -> str:
    char = _SINGLE_CHAR[op] if single and op in _SINGLE_CHAR else _CHAR[op]
    lazy = "?" if op in _LAZY else ""
    if prefix is None:
        return f"{char}*{lazy}"
    return rf"(?:%[0-9A-Fa-f]{{2}}|(?!%){char}){{0,{prefix}}}{lazy}"


MATCH_BUDGET = 4_000_000
"""Bound on the backtracking work of one `UriTemplate.match` (about n**k regex steps for a
URI of n characters and k variables that may absorb one another's text)."""

_NOT_IN_VALUE = {
    # Characters a value can never contain, by operator, for one variable and for several.
    "": (frozenset("/?#"), frozenset("/?#,")),
    "+": (frozenset(), frozenset(",")),
    "#": (frozenset(), frozenset(",")),
    ".": (frozenset("/?#.,"), frozenset("/?#.,")),
    "/": (frozenset("/?#,"), frozenset("/?#,")),
    ";": (frozenset("/?#;,"), frozenset("/?#;,")),
}


def _ambiguity(parts: Iterable[Part]) -> int:
    """The largest number of unbounded values that can absorb one another's text.

    A value ends where a character it cannot contain must be matched (a literal, or the
    separator that introduces the next value); values not separated that way can split the
    same text in many ways, which a backtracking matcher explores one by one.
    """
    chain_excluded: frozenset[str] | None = None  # None: no value in the chain yet
    count = worst = 0

    def anchor(text: str) -> None:
        nonlocal chain_excluded, count
        if chain_excluded is None or any(ch in chain_excluded for ch in text):
            chain_excluded, count = None, 0

    for part in parts:
        if isinstance(part, str):
            anchor(_encode(part, True))
            continue
        op = part.operator
        if op in ("?", "&"):
            anchor(op)
            excluded = frozenset("#")
            chain_excluded = excluded if chain_excluded is None else chain_excluded & excluded
            count += 1
            worst = max(worst, count)
            continue
        single = len(part.variables) == 1
        for i, spec in enumerate(part.variables):
            lead = _OPS[op].first if i == 0 else _OPS[op].sep
            if op == ";":
                lead = ";" + spec.name
            if lead:
                anchor(lead)
            excluded = _NOT_IN_VALUE[op][0 if single else 1]
            chain_excluded = excluded if chain_excluded is None else chain_excluded & excluded
            unbounded = spec.prefix is None
            if unbounded:
                count += 1
                worst = max(worst, count)
    return worst


class UriTemplate:
    """A parsed RFC 6570 template. ``str(t)`` is the original text."""

    __slots__ = ("text", "parts", "variables", "_regex", "_groups", "max_match_length")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError("a URI template is a string")
        self.text = text
        self.parts: tuple[Part, ...] = tuple(_parse(text))
        names: list[str] = []
        for part in self.parts:
            if isinstance(part, Expression):
                for spec in part.variables:
                    if spec.name not in names:
                        names.append(spec.name)
        self.variables: tuple[str, ...] = tuple(names)
        """Variable names in order of first appearance."""
        self._regex: re.Pattern[str] | None = None
        self._groups: list[tuple[str, Any]] = []
        k = _ambiguity(self.parts)
        self.max_match_length: int | None = None if k < 2 else int(MATCH_BUDGET ** (1 / k))
        """Longest URI `match` considers (None: no limit). Set when several variables can
        absorb one another's text, so that matching an untrusted URI stays cheap."""

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
                out.append(_encode(part, True))
            else:
                out.append(_expand_expression(part, vals))
        return "".join(out)

    # --- matching ---

    def _compile(self) -> re.Pattern[str]:
        pattern: list[str] = []
        groups: list[tuple[str, Any]] = []
        parts = list(self.parts)
        i = 0
        gid = 0

        def group(kind: str, payload: Any) -> str:
            nonlocal gid
            gid += 1
            groups.append((kind, payload))
            return f"g{gid}"

        while i < len(parts):
            part = parts[i]
            i += 1
            if isinstance(part, str):
                pattern.append(re.escape(_encode(part, True)))
                continue
            op = part.operator
            if op in ("?", "&"):
                # A query expression and the '&' expressions right after it form one group,
                # whose pairs may come in any order.
                specs = list(part.variables)
                while i < len(parts):
                    nxt = parts[i]
                    if not isinstance(nxt, Expression) or nxt.operator != "&":
                        break
                    specs.extend(nxt.variables)
                    i += 1
                name = group("query", specs)
                lead = re.escape(op)
                pattern.append(rf"(?:{lead}(?P<{name}>[^#]*))?")
                continue
            single = len(part.variables) == 1
            first = re.escape(_OPS[op].first)
            sep = re.escape(_OPS[op].sep)
            pieces: list[str] = []
            for spec in part.variables:
                if spec.explode:
                    name = group("explode", (op, spec))
                    if op in ("", "+", "#"):
                        pieces.append(rf"(?P<{name}>{_value_class(op, single)})")
                    elif op == ";":
                        item = rf";{re.escape(spec.name)}(?:={_value_class(op, False)})?"
                        pieces.append(rf"(?P<{name}>(?:{item})+)")
                    else:
                        pieces.append(rf"(?P<{name}>(?:{sep}{_value_class(op, False)})+)")
                    continue
                name = group("value", (op, spec))
                cls = _value_class(op, single, spec.prefix)
                if op == ";":
                    # The group spans ";name[=value]" so that a bare ";name" binds "".
                    pieces.append(rf"(?P<{name}>;{re.escape(spec.name)}(?:={cls})?)")
                elif op in (".", "/"):
                    pieces.append(rf"(?:{sep}(?P<{name}>{cls}))")
                else:
                    pieces.append(rf"(?P<{name}>{cls})")
            if op in (".", "/", ";"):
                # Every variable is introduced by its own separator; each may be absent.
                pattern.append("".join(f"{p}?" for p in pieces))
            else:
                body = pieces[0]
                for p in pieces[1:]:
                    body += rf"(?:,{p})?"
                pattern.append(rf"(?:{first}{body})?" if first else body)
        self._groups = groups
        self._regex = re.compile("".join(pattern), re.DOTALL)
        return self._regex

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables ``uri`` binds, or ``None`` when it does not fit the template (or is
        longer than `max_match_length`)."""
        if self.max_match_length is not None and len(uri) > self.max_match_length:
            return None
        regex = self._regex or self._compile()
        m = regex.fullmatch(uri)
        if m is None:
            return None
        out: dict[str, str | list[str]] = {}
        partial: set[str] = set()
        try:
            for index, (kind, payload) in enumerate(self._groups, start=1):
                raw = m.group(f"g{index}")
                if raw is None:
                    continue
                if kind == "value":
                    op, spec = payload
                    if op == ";":
                        raw = raw[len(spec.name) + 2 :]  # drop ";name" and "="
                    if not _bind(out, partial, spec, _decode(raw)):
                        return None
                elif kind == "explode":
                    op, spec = payload
                    values = _split_exploded(op, spec, raw)
                    if values is None or spec.name in out:
                        return None
                    out[spec.name] = values
                elif not _bind_query(out, partial, payload, raw):
                    return None
        except UnicodeDecodeError:
            return None
        return out


def _decode(raw: str) -> str:
    return unquote(raw, errors="strict")


def _bind(out: dict[str, str | list[str]], partial: set[str], spec: VarSpec, value: str) -> bool:
    """Record a value; a variable seen twice must agree (a ``:prefix`` occurrence only has
    to be a prefix of the full value)."""
    old = out.get(spec.name)
    if old is None:
        out[spec.name] = value
        if spec.prefix is not None:
            partial.add(spec.name)
        return True
    if isinstance(old, list):
        return False
    if spec.prefix is not None:
        return (
            old.startswith(value)
            if spec.name not in partial
            else (old.startswith(value) or value.startswith(old))
        )
    if spec.name in partial:
        if not value.startswith(old):
            return False
        out[spec.name] = value
        partial.discard(spec.name)
        return True
    return old == value


def _split_exploded(op: str, spec: VarSpec, raw: str) -> list[str] | None:
    if op in ("", "+", "#"):
        return [_decode(v) for v in raw.split(",")] if raw else []
    if op == ";":
        values: list[str] = []
        for item in raw.split(";")[1:]:
            key, eq, val = item.partition("=")
            if key != spec.name:
                return None
            values.append(_decode(val) if eq else "")
        return values
    sep = _OPS[op].sep
    return [_decode(v) for v in raw.split(sep)[1:]]


def _bind_query(
    out: dict[str, str | list[str]], partial: set[str], specs: Iterable[VarSpec], raw: str
) -> bool:
    by_name = {s.name: s for s in specs}
    if not raw:
        return True
    for item in raw.split("&"):
        if not item:
            continue
        key, _, val = item.partition("=")
        name = _decode(key)
        spec = by_name.get(name)
        if spec is None:
            return False
        value = _decode(val)
        if spec.explode:
            prior = out.get(name)
            if isinstance(prior, list):
                prior.append(value)
            else:
                out[name] = [value]
        elif not _bind(out, partial, spec, value):
            return False
    return True


def expand(template: str, values: Mapping[str, Any] | None = None, **kw: Any) -> str:
    """Expand ``template`` once (parse + expand)."""
    return UriTemplate(template).expand(values, **kw)
