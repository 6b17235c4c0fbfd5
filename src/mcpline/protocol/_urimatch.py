"""RFC 6570 URI templates, matching: a URI back to a template's variables in linear time.

The template becomes a tree of nodes over a token alphabet (pct-triplets of the template's
literals get one code each); the URI is tokenised the same way and matched with bit-parallel
position sets, so no input can make matching backtrack.
"""

from __future__ import annotations

import codecs
import functools
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ._uriparse import OPS, Expression, Part, VarSpec, encode


@dataclass(frozen=True)
class _Lit:
    tokens: bytes


@dataclass(frozen=True)
class _Run:
    """Zero or more tokens not in ``excluded`` (at most ``limit`` of them)."""

    excluded: bytes
    lazy: bool = False
    limit: int | None = None


@dataclass(frozen=True)
class _Opt:
    node: _Node


@dataclass(frozen=True)
class _Seq:
    nodes: tuple[_Node, ...]


@dataclass(frozen=True)
class _Items:
    """One or more ``item`` in a row, each starting with ``;`` (``{;name*}``'s items)."""

    item: _Node


@dataclass(frozen=True)
class _Cap:
    """Record where ``node`` matched as group ``index``; ``node``'s ends are tried longest
    first (shortest first when ``lazy``)."""

    index: int
    node: _Node
    lazy: bool = False


_Node = _Lit | _Run | _Opt | _Seq | _Items | _Cap

# Raw characters a value cannot contain, by operator: with several variables in the
# expression, and with one (which may then also contain the list separator).
_EXCLUDED = {
    "": (b"/?#,", b"/?#"),
    "+": (b",", b""),
    "#": (b",", b""),
    ".": (b"/?#.,", b"/?#.,"),
    "/": (b"/?#,", b"/?#,"),
    ";": (b"/?#;,", b"/?#;,"),
}
_LAZY = frozenset("+#")

# Token alphabet: URI characters stand for themselves; every other character is _OTHER (only
# a value can contain it); a pct-triplet is _TRIPLET unless it occurs in a literal of the
# template, which gives it a code of its own.
_OTHER = "\x00"
_TRIPLET = "\x01"
_CODES = "".join(map(chr, [*range(2, 32), *range(127, 256)]))
_TRIPLET_BYTES = (_TRIPLET + _CODES).encode("latin-1")
_NOT_URI_CHAR = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]")
_PCT_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
_PCT_TRIPLET_BYTES = re.compile(rb"%(?=[0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""What no matched value may contain, raw or pct-encoded: C0 controls (NUL included) and DEL,
which cut C strings and paths short and forge lines in logs and terminals."""


class _Text:
    """One URI being matched: its tokens, and position sets as bitmasks."""

    __slots__ = ("tokens", "n", "all", "_masks")

    def __init__(self, tokens: bytes) -> None:
        self.tokens = tokens
        self.n = len(tokens)
        self.all = (1 << (self.n + 1)) - 1
        self._masks: dict[tuple[bytes, bool], int] = {}

    def mask(self, chars: bytes, inside: bool) -> int:
        """Positions whose token is (``inside``) or is not in ``chars``."""
        key = (chars, inside)
        found = self._masks.get(key)
        if found is None:
            found = int(self.tokens.translate(_bits(chars, inside)) + b"0", 2)
            self._masks[key] = found
        return found

    def has(self, positions: int, p: int) -> bool:
        return bool(positions >> (self.n - p) & 1)

    def span(self, a: int, b: int) -> int:
        """Positions ``a`` to ``b`` inclusive."""
        return ((1 << (b - a + 1)) - 1) << (self.n - b)

    def back(self, node: _Node, after: int) -> int:
        """Positions from which ``node`` can match text ending at one of ``after``."""
        if isinstance(node, _Lit):
            out = after << len(node.tokens)
            for j, token in enumerate(node.tokens):
                out &= self.mask(bytes((token,)), True) << j
            return out
        if isinstance(node, _Run):
            allowed = self.mask(node.excluded, False)
            out = after | _reach(allowed, (after << 1) & allowed)
            if node.limit is not None:
                out &= _dilate(after, node.limit)
            return out & self.all
        if isinstance(node, _Opt):
            return after | self.back(node.node, after)
        if isinstance(node, _Seq):
            for part in reversed(node.nodes):
                after = self.back(part, after)
            return after
        if isinstance(node, _Cap):
            return self.back(node.node, after)
        # _Items: an item that can end where the next ';' is links to the item there; a run
        # of linked items ending in one that can end in ``after`` matches.
        semi = self.mask(b";", True)
        good = self.back(node.item, after)
        linked = self.back(node.item, semi)
        through = (self.all & ~semi & ~1) | linked
        return semi & (good | _reach(through, (good << 1) & through))

    def walk(self, node: _Node, p: int, after: int, spans: dict[int, tuple[int, int]]) -> int:
        """Match ``node`` at ``p`` (which ``back(node, after)`` contains) the way a
        backtracking matcher's first success would; record groups in ``spans``."""
        if isinstance(node, _Lit):
            return p + len(node.tokens)
        if isinstance(node, _Seq):
            if not node.nodes:
                return p
            follows = [after]
            for part in reversed(node.nodes[1:]):
                follows.append(self.back(part, follows[-1]))
            for part, rest in zip(node.nodes, reversed(follows), strict=True):
                p = self.walk(part, p, rest, spans)
            return p
        if isinstance(node, _Opt):
            if self.has(self.back(node.node, after), p):
                return self.walk(node.node, p, after, spans)
            return p
        if isinstance(node, _Cap):
            q = self.end(node.node, p, after, node.lazy)
            spans[node.index] = (p, q)
            return q
        return self.end(node, p, after, isinstance(node, _Run) and node.lazy)

    def end(self, node: _Node, p: int, after: int, lazy: bool) -> int:
        """The longest (``lazy``: shortest) match of ``node`` at ``p`` that ends in ``after``."""
        n = self.n
        if isinstance(node, _Run):
            outside = ~self.mask(node.excluded, False) & ((1 << (n - p + 1)) - 1)
            last = n - (outside.bit_length() - 1)  # the run of allowed tokens ends here
            if node.limit is not None:
                last = min(last, p + node.limit)
            ends = after & self.span(p, last)
            if lazy:
                return n - (ends.bit_length() - 1)
            return n - ((ends & -ends).bit_length() - 1)
        lo, hi = p, n  # the answer lies in [lo, hi]
        while lo < hi:
            if lazy:
                mid = (lo + hi) // 2
                if self.has(self.back(node, after & self.span(p, mid)), p):
                    hi = mid
                else:
                    lo = mid + 1
            else:
                mid = (lo + hi + 1) // 2
                if self.has(self.back(node, after & self.span(mid, n)), p):
                    lo = mid
                else:
                    hi = mid - 1
        return lo


@functools.lru_cache(maxsize=64)
def _bits(chars: bytes, inside: bool) -> bytes:
    """A `bytes.translate` table: b"1" for the tokens in ``chars`` (``inside``) or not."""
    return bytes(0x31 if (i in chars) == inside else 0x30 for i in range(256))


def _reach(allowed: int, seeds: int) -> int:
    """The bits of ``allowed`` at or above a bit of ``seeds`` (a subset of ``allowed``) in
    the same run of consecutive ``allowed`` bits."""
    unseeded = allowed & ~seeds
    starts = allowed & ~(allowed << 1) & ~seeds  # the lowest bit of each run, if unseeded
    below_first_seed = unseeded & ~(unseeded + starts)
    return allowed & ~below_first_seed


def _dilate(positions: int, k: int) -> int:
    """``positions`` shifted up by every amount from 0 to ``k``, or-ed together."""
    out, width = positions, 1
    while width * 2 <= k + 1:
        out |= out << width
        width *= 2
    if width < k + 1:
        out |= out << (k + 1 - width)
    return out


class Matcher:
    """Matches URIs back to one template's variables (see `UriTemplate.match`)."""

    __slots__ = ("text", "parts", "_pattern", "_groups", "_codes", "_head", "_tail")

    def __init__(self, text: str, parts: tuple[Part, ...]) -> None:
        self.text = text
        self.parts = parts
        self._codes: dict[str, str] = {}
        self._groups: list[tuple[str, Any]] = []
        self._pattern = self._compile()
        first, last = parts[0] if parts else "", parts[-1] if parts else ""
        self._head = encode(first, True) if isinstance(first, str) else ""
        self._tail = encode(last, True) if isinstance(last, str) else ""

    def _literal(self, text: str) -> _Lit:
        """The tokens of literal ``text`` (pct-encoded as expansion would)."""
        out: list[str] = []
        for piece in re.split(r"(%[0-9A-Fa-f]{2})", encode(text, True)):
            if piece.startswith("%"):
                if piece not in self._codes:
                    if len(self._codes) == len(_CODES):
                        raise ValueError(
                            f"URI template {self.text!r} has more than {len(_CODES)} distinct "
                            "pct-encoded octets in its literals"
                        )
                    self._codes[piece] = _CODES[len(self._codes)]
                out.append(self._codes[piece])
            else:
                out.append(piece)
        return _Lit("".join(out).encode("latin-1"))

    def _compile(self) -> _Node:
        nodes: list[_Node] = []
        groups = self._groups
        parts = list(self.parts)
        i = 0

        def group(kind: str, payload: Any, node: _Node, lazy: bool = False) -> _Cap:
            groups.append((kind, payload))
            return _Cap(len(groups) - 1, node, lazy)

        while i < len(parts):
            part = parts[i]
            i += 1
            if isinstance(part, str):
                nodes.append(self._literal(part))
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
                query = group("query", specs, _Run(b"#"))
                nodes.append(_Opt(_Seq((self._literal(op), query))))
                continue
            single = len(part.variables) == 1
            lazy = op in _LAZY
            excluded = _EXCLUDED[op][1 if single else 0]
            first = self._literal(OPS[op].first)
            sep = self._literal(OPS[op].sep)
            pieces: list[_Node] = []
            for spec in part.variables:
                if spec.explode:
                    if op in ("", "+", "#"):
                        pieces.append(group("explode", (op, spec), _Run(excluded, lazy), lazy))
                        continue
                    if op == ";":
                        value = _Seq((self._literal("="), _Run(excluded)))
                        item = _Seq((self._literal(";" + spec.name), _Opt(value)))
                        pieces.append(group("explode", (op, spec), _Items(item)))
                        continue
                    # '.' and '/': one or more "sep value", i.e. sep then values and seps.
                    run = _Run(bytes(c for c in excluded if c not in sep.tokens))
                    pieces.append(group("explode", (op, spec), _Seq((sep, run))))
                    continue
                run = _Run(excluded + b"%" if spec.prefix else excluded, lazy, spec.prefix)
                if op == ";":
                    # The group spans ";name[=value]" so that a bare ";name" binds "".
                    value = _Seq((self._literal("="), run))
                    item = _Seq((self._literal(";" + spec.name), _Opt(value)))
                    pieces.append(group("value", (op, spec), item))
                elif op in (".", "/"):
                    pieces.append(_Seq((sep, group("value", (op, spec), run, lazy))))
                else:
                    pieces.append(group("value", (op, spec), run, lazy))
            if op in (".", "/", ";"):
                # Every variable is introduced by its own separator; each may be absent.
                nodes.extend(_Opt(p) for p in pieces)
            else:
                comma = self._literal(",")
                body = _Seq((pieces[0], *(_Opt(_Seq((comma, p))) for p in pieces[1:])))
                nodes.append(_Opt(_Seq((first, body))) if first.tokens else body)
        return _Seq(tuple(nodes))

    def _tokens(self, uri: str) -> bytes:
        text = _NOT_URI_CHAR.sub(_OTHER, uri)
        if "%" in text:
            for triplet, code in self._codes.items():
                text = text.replace(triplet, code)
            text = _PCT_TRIPLET.sub(_TRIPLET, text)
        return text.encode("latin-1")

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The variables ``uri`` binds, or ``None`` when it does not fit the template (or
        a value would contain a control character: U+0000 to U+001F, U+007F).

        Runs in time linear in ``len(uri)`` for a given template (a few big-integer
        operations on ``len(uri)``-bit numbers per template node, times ``log2(len(uri))``
        for ``{;x}``, ``{.x*}``, ``{/x*}`` and ``{;x*}``), whatever the URI. When several
        splits fit, variables are bound left to right, each taking the longest text that lets
        the rest match (``{+var}`` and ``{#var}``: the shortest); a URI is only split between
        pct-triplets.
        """
        if not (uri.startswith(self._head) and uri.endswith(self._tail)):
            return None
        tokens = self._tokens(uri)
        text = _Text(tokens)
        if not text.has(text.back(self._pattern, 1), 0):
            return None
        spans: dict[int, tuple[int, int]] = {}
        text.walk(self._pattern, 0, 1, spans)

        def at(position: int) -> int:
            before = tokens[:position]
            return position + 2 * (position - len(before.translate(None, _TRIPLET_BYTES)))

        out: dict[str, str | list[str]] = {}
        partial: set[str] = set()
        try:
            for index, (kind, payload) in enumerate(self._groups):
                span = spans.get(index)
                if span is None:
                    continue
                raw = uri[at(span[0]) : at(span[1])]
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
        for value in out.values():
            if any(_CONTROL.search(v) for v in ([value] if isinstance(value, str) else value)):
                return None
        return out


def _decode(raw: str) -> str:
    """Pct-decode ``raw`` as strict UTF-8 (`UnicodeDecodeError` otherwise), in C."""
    if "%" not in raw:
        return raw
    return _decode_each([raw])[0]


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


def _decode_each(raws: list[str]) -> list[str]:
    """`_decode` of every item, in a few passes over their text (a list may have thousands).

    The items are joined with byte 0xFF, which UTF-8 text never contains (so a ``%FF`` that
    splits an item is an error anyway), and their triplets decoded in one pass.
    """
    if "%" not in "".join(raws):
        return raws
    data = b"\xff".join([r.encode("utf-8", "surrogatepass") for r in raws])
    data = _PCT_TRIPLET_BYTES.sub(rb"\\x", data.replace(b"\\", b"\\\\"))
    parts = codecs.escape_decode(data)[0].split(b"\xff")
    if len(parts) != len(raws):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    out: list[str] = []
    for raw, part in zip(raws, parts, strict=True):
        try:
            out.append(part.decode("utf-8"))
        except UnicodeDecodeError:
            if raw.isascii() or not _has_surrogate(raw):
                raise
            out.append(unquote(raw, errors="strict"))  # which keeps a raw lone surrogate
    return out


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _split_exploded(op: str, spec: VarSpec, raw: str) -> list[str] | None:
    if op in ("", "+", "#"):
        return _decode_each(raw.split(",")) if raw else []
    if op == ";":
        lead = spec.name + "="
        cut = len(lead)
        items = raw.split(";")[1:]
        values = ["" if i == spec.name else i[cut:] if i.startswith(lead) else None for i in items]
        if None in values:
            return None
        return _decode_each(typing.cast(list[str], values))
    return _decode_each(raw.split(OPS[op].sep)[1:])


def _bind_query(
    out: dict[str, str | list[str]], partial: set[str], specs: Iterable[VarSpec], raw: str
) -> bool:
    by_name = {s.name: s for s in specs}
    pairs = [item.partition("=") for item in raw.split("&") if item]
    names = _decode_each([key for key, _, _ in pairs])
    values = _decode_each([value for _, _, value in pairs])
    if not by_name.keys() >= set(names):
        return False
    for name in dict.fromkeys(names):
        spec = by_name[name]
        given = [v for n, v in zip(names, values, strict=True) if n == name]
        if spec.explode:
            prior = out.get(name)
            if isinstance(prior, list):
                prior.extend(given)
            else:
                out[name] = given
        elif not all(_bind(out, partial, spec, v) for v in dict.fromkeys(given)):
            return False
    return True
