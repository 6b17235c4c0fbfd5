"""RFC 6570 URI templates, the part both directions share: parsing and expansion."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


OPS: dict[str, _Op] = {
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


def encode(value: str, allow_reserved: bool) -> str:
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


def parse(template: str) -> list[Part]:
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
    if body[0] in OPS and body[0] != "":
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


def expand_expression(expr: Expression, values: Mapping[str, Any]) -> str:
    op = OPS[expr.operator]
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
            enc = encode(text, op.reserved)
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
                    f"{encode(k, op.reserved)},{encode(v, op.reserved)}" for k, v in items
                )
            else:
                joined = ",".join(encode(v, op.reserved) for _, v in items)
            if op.named:
                pieces.append(spec.name + ("=" + joined if joined else op.ifemp))
            else:
                pieces.append(joined)
            continue
        exploded: list[str] = []
        for k, v in items:
            enc = encode(v, op.reserved)
            if is_map:
                exploded.append(f"{encode(k, op.reserved)}={enc}")
            elif op.named:
                exploded.append(spec.name + ("=" + enc if enc else op.ifemp))
            else:
                exploded.append(enc)
        pieces.append(op.sep.join(exploded))
    if not pieces:
        return ""
    return op.first + op.sep.join(pieces)


# --- matching ---------------------------------------------------------------------------------
#
# A template compiles to a small regular expression over *tokens* (a pct-triplet or one
# character), built from the nodes below. Matching computes, right to left, the set of
# positions from which the rest of the pattern can match, as an ``int`` bitmask over
# positions (bit ``n - p`` stands for position ``p``), with a constant number of big-integer
# operations per node; a run of characters is crossed in one addition, whose carry chain
# walks the run. Then, left to right, each node takes the end its regex quantifier prefers
# (the longest for greedy, the shortest for lazy) among the ends from which the rest can
# still match: the split Python's backtracking `re` would return, found without
# backtracking.
