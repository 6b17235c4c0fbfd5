"""JSON Schema (2020-12) for tools: derived from type hints, checked, and validated against.

Schemas come from `msgspec` (type hints → JSON Schema 2020-12, and validated dicts →
typed values), or from pydantic for a signature that uses it (a ``BaseModel``,
``pydantic.Field``, any other pydantic type or metadata; pydantic is imported only then).
Validation uses `jsonschema_rs`, compiled once per schema, with every network `$ref`
refused and the schema's size and depth bounded.

What an annotation says is honoured or refused when the function is registered: metadata
mcpline does not understand is a `SchemaError` naming the parameter, never ignored.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal

import msgspec

MAX_SCHEMA_DEPTH = 64
MAX_SCHEMA_NODES = 10_000
MAX_REPORTED_ERRORS = 5

DIALECTS = {
    "https://json-schema.org/draft/2020-12/schema": "Draft202012Validator",
    "https://json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "http://json-schema.org/draft-07/schema": "Draft7Validator",
    "http://json-schema.org/draft-06/schema": "Draft6Validator",
    "http://json-schema.org/draft-04/schema": "Draft4Validator",
}


class SchemaError(ValueError):
    """A schema that cannot be used: wrong root, unknown dialect, too large or invalid."""


class ArgumentError(ValueError):
    """Arguments that fit the schema but not the function's types (a pydantic validator,
    a conversion): the message names each field."""


class McpHeader:
    """Mirror a tool parameter into the HTTP header ``Mcp-Param-{name}``:
    ``region: Annotated[str, McpHeader("Region")]`` (``str``, ``int`` or ``bool`` only).

    It becomes the parameter's ``x-mcp-header`` annotation; HTTP clients then send the value
    in that header too, for intermediaries that route on it, and the server checks that both
    agree. Never mark secrets: headers are visible to every intermediary.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"McpHeader({self.name!r})"


def _dialect_class(schema: dict[str, Any]) -> str:
    uri = schema.get("$schema")
    if uri is None:
        return "Draft202012Validator"
    if not isinstance(uri, str):
        raise SchemaError("$schema must be a string")
    cls = DIALECTS.get(uri.rstrip("#"))
    if cls is None:
        raise SchemaError(
            f"unsupported JSON Schema dialect {uri!r}; supported: {', '.join(DIALECTS)}"
        )
    return cls


def check_bounds(schema: Any) -> None:
    """Reject schemas deeper than `MAX_SCHEMA_DEPTH` or with more than `MAX_SCHEMA_NODES` nodes."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaError(f"schema has more than {MAX_SCHEMA_NODES} nodes")
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def check_tool_input_schema(schema: Any) -> None:
    """An ``inputSchema`` must be a bounded JSON Schema object with root ``type: "object"``."""
    if not isinstance(schema, dict):
        raise SchemaError("inputSchema must be a JSON object")
    if schema.get("type") != "object":
        raise SchemaError('inputSchema must have "type": "object" at its root')
    check_schema(schema)


def check_schema(schema: Any) -> None:
    """Bounds and dialect only; full meta-validation happens when the validator is built."""
    if not isinstance(schema, (dict, bool)):
        raise SchemaError("a JSON Schema must be an object or a boolean")
    check_bounds(schema)
    if isinstance(schema, dict):
        _dialect_class(schema)


def _refuse_retrieval(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not fetched (network references are disabled)")


class Validator:
    """A compiled validator for one schema; built on first use."""

    __slots__ = ("schema", "_compiled")

    def __init__(self, schema: dict[str, Any] | bool) -> None:
        self.schema = schema
        self._compiled: Any = None

    def _compile(self) -> Any:
        import jsonschema_rs

        schema = self.schema
        cls_name = "Draft202012Validator" if isinstance(schema, bool) else _dialect_class(schema)
        cls = getattr(jsonschema_rs, cls_name)
        try:
            self._compiled = cls(schema, retriever=_refuse_retrieval, validate_formats=False)
        except jsonschema_rs.ValidationError as exc:
            raise SchemaError(f"invalid schema: {str(exc).splitlines()[0]}") from None
        return self._compiled

    def compile(self) -> None:
        """Build now (raises `SchemaError` for an invalid schema)."""
        if self._compiled is None:
            self._compile()

    def errors(self, instance: Any) -> list[str]:
        """Human-readable violations, at most `MAX_REPORTED_ERRORS`; empty when valid."""
        compiled = self._compiled or self._compile()
        if compiled.is_valid(instance):
            return []
        out = []
        for err in compiled.iter_errors(instance):
            path = "/".join(str(p) for p in err.instance_path)
            out.append(f"{'/' + path if path else 'arguments'}: {err.message}")
            if len(out) >= MAX_REPORTED_ERRORS:
                break
        return out

    def coerce(self, instance: Any) -> Any | None:
        """A copy of ``instance`` in which each string the schema rejects, where it wants a
        number, integer, boolean, array, object or null and the string is the JSON text of
        such a value (``"5"``, ``"2.5"``, ``"true"``, ``"[1, 2]"``), is replaced by that value;
        ``None`` when no string qualifies. ``instance`` is never changed."""
        root = self.schema
        if not isinstance(root, dict):
            return None
        out = _coerce(instance, root, root, 0)
        return None if out is instance else out


_NO_VALUE: Any = object()
_MISSING_NODE: Any = object()


def _at(node: Any, path: list[Any]) -> Any:
    """The node at ``path`` (keys and indexes) under ``node``, or a sentinel."""
    for seg in path:
        if isinstance(node, dict):
            if seg not in node:
                return _MISSING_NODE
        elif not (isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node)):
            return _MISSING_NODE
        node = node[seg]
    return node


def _coerce(value: Any, node: Any, root: dict[str, Any], depth: int) -> Any:
    """``value`` with the strings that ``node`` rejects replaced as `Validator.coerce` says
    (the same object when nothing changed; containers are copied only along changes)."""
    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > MAX_SCHEMA_DEPTH:
        return value
    if isinstance(value, str):
        new = _json_value_for(value, node, root)
        return value if new is _NO_VALUE else new
    kind = _json_kind(value)
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key) or ():
            if kind in _accepted(branch, root)[0]:
                value = _coerce(value, branch, root, depth + 1)
                break
    for branch in node.get("allOf") or ():
        value = _coerce(value, branch, root, depth + 1)
    if isinstance(value, dict):
        props = node.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = node.get("additionalProperties")
        changed: dict[str, Any] | None = None
        for k, v in value.items():
            sub = props.get(k, extra)
            if not isinstance(sub, dict):
                continue
            new = _coerce(v, sub, root, depth + 1)
            if new is not v:
                changed = changed if changed is not None else dict(value)
                changed[k] = new
        return value if changed is None else changed
    if isinstance(value, list):
        items = node.get("items")
        if not isinstance(items, dict):
            return value
        fixed = [_coerce(v, items, root, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(fixed, value, strict=True)) else fixed
    return value


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    """The target of a local ``$ref`` (``#/...``), followed through chains; anything else
    is returned as is."""
    for _ in range(8):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        target = _at(root, [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")])
        if target is _MISSING_NODE or ref == "#":
            return node
        node = target
    return node


def _accepted(node: Any, root: dict[str, Any], depth: int = 0) -> tuple[set[str], list[Any]]:
    """The JSON types and the enumerated values a (sub)schema accepts, as far as its
    ``type``, ``enum``, ``const``, ``$ref`` and ``anyOf``/``oneOf`` say."""
    node = _resolve(node, root)
    kinds: set[str] = set()
    values: list[Any] = []
    if not isinstance(node, dict) or depth > 8:
        return kinds, values
    t = node.get("type")
    if isinstance(t, str):
        kinds.add(t)
    elif isinstance(t, list):
        kinds.update(x for x in t if isinstance(x, str))
    if isinstance(node.get("enum"), list):
        values.extend(node["enum"])
    if "const" in node:
        values.append(node["const"])
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key) or ():
            k, v = _accepted(branch, root, depth + 1)
            kinds |= k
            values.extend(v)
    return kinds, values


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def _json_value_for(text: str, owner: dict[str, Any], root: dict[str, Any]) -> Any:
    """The value ``text`` spells in JSON, if the schema ``owner`` wants such a value and no
    string; else `_NO_VALUE`."""
    kinds, values = _accepted(owner, root)
    if "string" in kinds or any(isinstance(v, str) for v in values):
        return _NO_VALUE
    try:
        value = msgspec.json.decode(text.strip())
    except msgspec.DecodeError:
        return _NO_VALUE
    kind = _json_kind(value)
    if kind == "string":
        return _NO_VALUE
    if kind in kinds or (kind == "integer" and "number" in kinds):
        return value
    if any(_json_kind(v) == kind and v == value for v in values):
        return value
    return _NO_VALUE


# --- docstrings ------------------------------------------------------------------------------

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters"
    r"|Returns|Return|Yields|Yield|Raises|Raise|Exceptions|Examples|Example|Notes|Note"
    r"|Warnings|Warning|See Also|References|Attributes|Methods|Todo)\s*:\s*$"
)
_ARG_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def split_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The description and per-argument descriptions of a Google-style docstring.

    The description is the text before the first section header (``Args:``, ``Returns:``,
    ``Raises:``, ``Notes:``, ``Examples:`` …, each alone on its line): the summary and any
    paragraphs after it, which tell a model what the function is for. Sections are for
    people; argument descriptions come from ``Args:`` (or ``Arguments:``/``Parameters:``).
    Put implementation notes in a ``Notes:`` section (or a comment) to keep them from the
    model.
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    headers = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _SECTION.match(line))]
    end = headers[0][0] if headers else len(lines)
    args: dict[str, str] = {}
    for start, name in headers:
        if name in _ARG_SECTIONS:
            _parse_args(lines[start + 1 :], args)
    text = "\n".join(lines[:end]).strip()
    return (text or None), args


def _parse_args(lines: list[str], args: dict[str, str]) -> None:
    current: str | None = None
    indent: int | None = None
    for line in lines:
        if not line.strip():
            current = None
            continue
        lead = len(line) - len(line.lstrip())
        if indent is None:
            indent = lead
        if lead == 0:
            break
        m = _ARG_LINE.match(line)
        if m and lead == indent:
            current = m.group(1).lstrip("*")
            args[current] = m.group(3).strip()
        elif current:
            args[current] = (args[current] + " " + line.strip()).strip()


# --- what an annotation says -------------------------------------------------------------------

_FIELD_FIX = (
    "use Annotated[T, 'description'], Annotated[T, msgspec.Meta(...)] or, with pydantic "
    "installed, Annotated[T, pydantic.Field(...)]"
)


def _pydantic_loaded() -> bool:
    """Whether pydantic was imported (by anyone): without it no pydantic object exists, so
    nothing here ever imports it."""
    return "pydantic" in sys.modules


def _is_class(tp: Any) -> bool:
    """A class, not a parametrized generic (``list[int]`` passes ``isinstance(_, type)`` on
    Python 3.10)."""
    return isinstance(tp, type) and typing.get_origin(tp) is None


def _is_pydantic(obj: Any) -> bool:
    """Whether ``obj`` (a type or a metadata object) needs pydantic to be understood."""
    if not _pydantic_loaded():
        return False
    cls = obj if _is_class(obj) else type(obj)
    if cls.__module__.split(".")[0] in ("pydantic", "pydantic_core"):
        return True
    if _is_class(obj):
        import pydantic

        return issubclass(obj, pydantic.BaseModel) or pydantic.dataclasses.is_pydantic_dataclass(
            obj
        )
    return False


def _is_annotated_types(obj: Any) -> bool:
    return type(obj).__module__ == "annotated_types"


def _args_of(tp: Any) -> tuple[Any, ...]:
    """The type arguments to look into (none for ``Literal``, whose arguments are values)."""
    origin = typing.get_origin(tp)
    if origin is None or origin is typing.Literal:
        return ()
    return typing.get_args(tp)


def _walk(tp: Any, seen: set[int] | None = None) -> Iterator[Any]:
    """Every type and every ``Annotated`` metadata object inside ``tp``, and the field types
    of the dataclasses, TypedDicts and structs it names (each class once)."""
    seen = set() if seen is None else seen
    if id(tp) in seen:
        return
    seen.add(id(tp))
    yield tp
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        yield from meta
        yield from _walk(base, seen)
        return
    for arg in _args_of(tp):
        yield from _walk(arg, seen)
    if _is_class(tp) and not _is_pydantic(tp) and _has_fields(tp):
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception:
            return
        for hint in hints.values():
            yield from _walk(hint, seen)


def _has_fields(cls: type) -> bool:
    return (
        dataclasses.is_dataclass(cls) or issubclass(cls, msgspec.Struct) or typing.is_typeddict(cls)
    )


def _uses_pydantic(tp: Any, default: Any = inspect.Parameter.empty) -> bool:
    if not _pydantic_loaded():
        return False
    if default is not inspect.Parameter.empty and _is_pydantic(default):
        return True
    return any(_is_pydantic(node) for node in _walk(tp))


def _annotated(base: Any, meta: list[Any]) -> Any:
    args = (base, *meta)
    return typing.Annotated[args]  # Annotated[base, *meta], valid on 3.10


def _rebuild(tp: Any, fix: Callable[[list[Any]], list[Any]]) -> Any:
    """``tp`` with the metadata of every nested ``Annotated`` replaced by ``fix(metadata)``
    (and ``object``, which msgspec does not take, as ``Any``)."""
    if tp is object:
        return Any
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        new = fix(list(meta))
        inner = _rebuild(base, fix)
        return _annotated(inner, new) if new else inner
    args = _args_of(tp)
    if not args or origin is collections.abc.Callable:
        return tp
    new_args = tuple(_rebuild(a, fix) for a in args)
    if all(a is b for a, b in zip(args, new_args, strict=True)):
        return tp
    if origin is typing.Union or isinstance(tp, types.UnionType):
        return typing.Union[new_args]  # noqa: UP007 (built from a tuple)
    if isinstance(tp, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    copy_with = getattr(tp, "copy_with", None)
    if copy_with is None:
        raise TypeError(f"cannot look inside {tp!r}")
    return copy_with(new_args)


def _describe(meta: Any) -> str:
    text = repr(meta)
    if text.startswith("<"):
        return f"a {type(meta).__qualname__} object"
    return text if len(text) <= 60 else text[:57] + "..."


def _reason(exc: BaseException) -> str:
    """The telling line of a library's error message (msgspec puts it last)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _meta_from_annotated_types(m: Any) -> list[msgspec.Meta] | None:
    """``annotated_types`` constraints as `msgspec.Meta` (``None`` when there is no match)."""
    name = type(m).__name__
    simple = {
        "Gt": "gt",
        "Ge": "ge",
        "Lt": "lt",
        "Le": "le",
        "MultipleOf": "multiple_of",
        "MinLen": "min_length",
        "MaxLen": "max_length",
    }
    if name in simple:
        key = simple[name]
        return [msgspec.Meta(**{key: getattr(m, key)})]
    if name in ("Interval", "Len"):
        out: list[msgspec.Meta] = []
        for sub in m:
            found = _meta_from_annotated_types(sub)
            if found is None:
                return None
            out.extend(found)
        return out
    return None


def _meta_kwargs(m: msgspec.Meta) -> dict[str, Any]:
    """A `msgspec.Meta` as the keyword arguments of ``pydantic.Field``."""
    if m.tz is not None:
        raise TypeError("msgspec.Meta(tz=...) has no pydantic equivalent; use pydantic's types")
    out: dict[str, Any] = {}
    for key in (
        "gt",
        "ge",
        "lt",
        "le",
        "multiple_of",
        "pattern",
        "min_length",
        "max_length",
        "title",
        "description",
        "examples",
    ):
        value = getattr(m, key)
        if value is not None:
            out[key] = value
    if m.extra_json_schema:
        out["json_schema_extra"] = dict(m.extra_json_schema)
    return out


class _Translate:
    """Turns the ``Annotated`` metadata of one parameter into what one engine understands;
    raises `SchemaError` naming the parameter for anything it cannot honour."""

    def __init__(self, where: str, pydantic: bool) -> None:
        self.where = where
        self.pydantic = pydantic

    def fail(self, what: str, fix: str = _FIELD_FIX) -> SchemaError:
        return SchemaError(f"{self.where}: {what} cannot be honoured; {fix}")

    def nested(self, meta: list[Any]) -> list[Any]:
        return self.items(meta, top=False)

    def items(self, meta: list[Any], *, top: bool) -> list[Any]:
        out: list[Any] = []
        for m in meta:
            if isinstance(m, McpHeader):
                if not top:
                    raise self.fail(
                        f"{m!r} inside the type", "put McpHeader on the parameter itself"
                    )
                out.append(self.header(m))
            elif isinstance(m, str):
                out.append(self.description(m))
            elif isinstance(m, msgspec.Meta):
                out.append(self.field(**_meta_kwargs(m)) if self.pydantic else m)
            elif self.pydantic and (_is_pydantic(m) or _is_annotated_types(m)):
                out.append(m)
            elif not self.pydantic and _is_annotated_types(m):
                found = _meta_from_annotated_types(m)
                if found is None:
                    raise self.fail(
                        f"{_describe(m)}", "check it in the function, or install pydantic"
                    )
                out.extend(found)
            else:
                raise self.fail(f"the Annotated metadata {_describe(m)}")
        return out

    def description(self, text: str) -> Any:
        return self.field(description=text) if self.pydantic else msgspec.Meta(description=text)

    def header(self, m: McpHeader) -> Any:
        extra = {"x-mcp-header": m.name}
        return (
            self.field(json_schema_extra=extra)
            if self.pydantic
            else msgspec.Meta(extra_json_schema=extra)
        )

    @staticmethod
    def field(**kwargs: Any) -> Any:
        import pydantic

        return pydantic.Field(**kwargs)


def _explicit_description(meta: list[Any]) -> bool:
    return any(isinstance(m, str) or getattr(m, "description", None) for m in meta)


def _prepare(tp: Any, tr: _Translate, doc: str | None, default: Any) -> Any:
    """A parameter's type with its metadata translated (and its docstring description,
    unless the annotation or a ``Field`` default gives one)."""
    meta: list[Any] = []
    base = tp
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
    try:
        base = _rebuild(base, tr.nested)
    except TypeError as exc:
        raise tr.fail(f"the type {base!r}", str(exc)) from None
    extras = tr.items(meta, top=True)
    if doc and not _explicit_description(meta) and not getattr(default, "description", None):
        extras.append(tr.description(doc))
    return _annotated(base, extras) if extras else base


# --- declaration order of Literal and Enum choices ------------------------------------------------


def _choices(tps: list[Any]) -> list[list[Any]]:
    """The values of every ``Literal`` and ``Enum`` in ``tps``, in declaration order."""
    found: list[list[Any]] = []
    for tp in tps:
        for node in _walk(tp):
            if typing.get_origin(node) is typing.Literal:
                found.append([v.value if isinstance(v, enum.Enum) else v for v in node.__args__])
            elif _is_class(node) and issubclass(node, enum.Enum):
                found.append([m.value for m in node])
    return found


def _keep_declared_order(schema: Any, choices: list[list[Any]]) -> None:
    """msgspec sorts ``enum`` lists; put each back in the order its type declared it."""
    if not choices:
        return
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            values = node.get("enum")
            if isinstance(values, list):
                for declared in choices:
                    if len(declared) == len(values) and all(
                        any(type(v) is type(d) and v == d for d in declared) for v in values
                    ):
                        node["enum"] = list(declared)
                        break
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


# --- type hints → schema ------------------------------------------------------------------


@functools.cache
def _pydantic_generator() -> Any:
    """pydantic's JSON Schema generator, without the titles it invents for every field."""
    from pydantic.json_schema import GenerateJsonSchema

    class Generator(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return Generator


def _pydantic_errors(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``field: message`` pairs."""
    parts = []
    for err in exc.errors(include_url=False)[:MAX_REPORTED_ERRORS]:
        loc = "/".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{'/' + loc if loc else 'arguments'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


class Signature:
    """How a function's parameters map to a tool's ``arguments``.

    msgspec derives the schema and converts the arguments, unless a parameter uses pydantic
    (a model, ``Field``, a pydantic type or metadata), in which case pydantic does both for
    the whole signature.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        skip: Callable[[Any], bool],
        arg_docs: dict[str, str],
    ) -> None:
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise SchemaError(f"cannot resolve type hints of {name}: {exc}") from exc
        self.context_param: str | None = None
        self.var_kw = False
        self.names: list[str] = []
        params: list[tuple[str, Any, Any]] = []
        for pname, p in sig.parameters.items():
            hint = hints.get(pname, Any)
            if skip(hint):
                self.context_param = pname
                continue
            if p.kind is p.VAR_KEYWORD:
                self.var_kw = True
                continue
            if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
                raise SchemaError(f"{name}: parameter {pname!r} cannot be passed by name")
            params.append((pname, hint, p.default))
            self.names.append(pname)
        self._model: Any = None
        """The pydantic model of the arguments (``None``: msgspec converts them)."""
        self.struct: Any = None
        if any(_uses_pydantic(hint, default) for _, hint, default in params):
            root = self._with_pydantic(name, params, arg_docs)
        else:
            try:
                root = self._with_msgspec(name, params, arg_docs)
            except SchemaError as exc:
                if not _pydantic_loaded():
                    raise
                # e.g. a dataclass holding a pydantic model: pydantic may know it
                try:
                    root = self._with_pydantic(name, params, arg_docs)
                except SchemaError:
                    raise exc from None
        _keep_declared_order(root, _choices([hint for _, hint, _ in params]))
        out: dict[str, Any] = {"type": "object", "properties": root.pop("properties", {})}
        required = root.pop("required", None)
        if required:
            out["required"] = required
        root.pop("additionalProperties", None)
        if not self.var_kw:
            out["additionalProperties"] = False
        defs = root.pop("$defs", None)
        for key in ("title", "type"):
            root.pop(key, None)
        out.update(root)  # anything else the engine said (a description, …)
        if defs:
            out["$defs"] = defs
        self.schema: dict[str, Any] = out

    # --- msgspec --------------------------------------------------------------------------

    def _with_msgspec(
        self, name: str, params: list[tuple[str, Any, Any]], arg_docs: dict[str, str]
    ) -> dict[str, Any]:
        fields: list[Any] = []
        for pname, hint, default in params:
            tr = _Translate(f"{name}: parameter {pname!r}", pydantic=False)
            tp = _prepare(hint, tr, arg_docs.get(pname), default)
            fields.append(
                (pname, tp) if default is inspect.Parameter.empty else (pname, tp, default)
            )
        struct_name = re.sub(r"\W", "_", name) + "Arguments"
        try:
            self.struct = msgspec.defstruct(
                struct_name, fields, kw_only=True, forbid_unknown_fields=not self.var_kw
            )
            (_,), components = msgspec.json.schema_components(
                [self.struct], ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError) as exc:
            raise SchemaError(_culprit(name, fields, exc)) from exc
        root = dict(components.pop(struct_name))
        if components:
            root["$defs"] = components
        return root

    # --- pydantic -------------------------------------------------------------------------

    def _with_pydantic(
        self, name: str, params: list[tuple[str, Any, Any]], arg_docs: dict[str, str]
    ) -> dict[str, Any]:
        import pydantic
        from pydantic.fields import FieldInfo

        fields: dict[str, Any] = {}
        for i, (pname, hint, default) in enumerate(params):
            where = f"{name}: parameter {pname!r}"
            tr = _Translate(where, pydantic=True)
            try:
                tp = _prepare(hint, tr, arg_docs.get(pname), default)
            except TypeError as exc:  # msgspec.Meta(tz=...)
                raise SchemaError(f"{where}: {exc}") from None
            if isinstance(default, FieldInfo):
                if default.alias or default.validation_alias:
                    raise SchemaError(
                        f"{where}: Field(alias=...) cannot be honoured; the argument is named "
                        "after the parameter (rename the parameter instead)"
                    )
                spec = FieldInfo.merge_field_infos(default, pydantic.Field(alias=pname))
            elif default is inspect.Parameter.empty:
                spec = pydantic.Field(alias=pname)
            else:
                spec = pydantic.Field(default, alias=pname)
            # Fields are named p0, p1, ... so that no parameter name can clash with
            # BaseModel's own attributes (json, schema, model_*); the alias is the name.
            fields[f"p{i}"] = (tp, spec)
        model_name = re.sub(r"\W", "_", name) + "Arguments"
        config = pydantic.ConfigDict(
            extra="ignore" if self.var_kw else "forbid", arbitrary_types_allowed=False
        )
        try:
            model = pydantic.create_model(model_name, __config__=config, **fields)
            root = model.model_json_schema(
                by_alias=True,
                ref_template="#/$defs/{model}",
                schema_generator=_pydantic_generator(),
            )
        except (TypeError, ValueError, pydantic.PydanticUserError) as exc:
            raise SchemaError(_pydantic_culprit(name, params, exc)) from exc
        self._model = model
        self.struct = None
        return dict(root)

    def _bind_pydantic(self, arguments: dict[str, Any]) -> dict[str, Any]:
        import pydantic

        known = (
            {k: v for k, v in arguments.items() if k in self.names} if self.var_kw else arguments
        )
        try:
            value = self._model.model_validate(known)
        except pydantic.ValidationError as exc:
            raise ArgumentError(_pydantic_errors(exc)) from None
        out = {n: getattr(value, f"p{i}") for i, n in enumerate(self.names)}
        if self.var_kw:
            out.update((k, v) for k, v in arguments.items() if k not in self.names)
        return out

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Typed keyword arguments from validated JSON arguments (`ArgumentError`,
        `msgspec.ValidationError` or `TypeError` when they do not convert)."""
        if self._model is not None:
            return self._bind_pydantic(arguments)
        # msgspec, inline: this is every plain tool's hot path
        if not self.var_kw:
            value = msgspec.convert(arguments, self.struct, strict=False)
            return {n: getattr(value, n) for n in self.names}
        known = {k: v for k, v in arguments.items() if k in self.names}
        value = msgspec.convert(known, self.struct, strict=False)
        out = {n: getattr(value, n) for n in self.names}
        out.update((k, v) for k, v in arguments.items() if k not in self.names)
        return out


def _culprit(name: str, fields: list[Any], exc: Exception) -> str:
    """msgspec failed on a whole signature: say which parameter, and what to write."""
    for field in fields:
        pname, tp = field[0], field[1]
        try:
            msgspec.json.schema(tp)
            if len(field) > 2:
                msgspec.json.schema(msgspec.defstruct("_", [field]))
        except (TypeError, ValueError) as inner:
            return (
                f"{name}: parameter {pname!r}: cannot derive a JSON Schema ({_reason(inner)}); use "
                "JSON types (str, int, float, bool, None, list, dict), Literal, Enum, "
                "dataclasses, TypedDict, msgspec.Struct, datetime/UUID/Decimal, or pydantic "
                "models with pydantic installed"
            )
    return f"{name}: cannot derive a JSON Schema: {_reason(exc)}"


def _pydantic_culprit(name: str, params: list[tuple[str, Any, Any]], exc: Exception) -> str:
    import pydantic

    for pname, hint, _ in params:
        try:
            pydantic.TypeAdapter(hint).json_schema()
        except Exception as inner:
            first = str(inner).splitlines()[0]
            return (
                f"{name}: parameter {pname!r}: pydantic cannot describe this type ({first}); "
                "in a signature that uses pydantic every parameter needs a type pydantic "
                "knows (a msgspec.Struct does not mix with pydantic: use a model or dataclass)"
            )
    return f"{name}: cannot derive a JSON Schema: {str(exc).splitlines()[0]}"


def output_schema_for(tp: Any) -> tuple[dict[str, Any], bool]:
    """The ``outputSchema`` for a return type, and whether values are wrapped in ``{"result": …}``.

    Non-object return types are wrapped so the schema is an object at its root, which
    every client era accepts. A pydantic return type is described by pydantic (in
    serialization mode, as the value is sent); `SchemaError` for a type neither describes.
    """
    pydantic = _uses_pydantic(tp)
    tr = _Translate("the return annotation", pydantic=pydantic)
    try:
        described = _rebuild(tp, tr.nested)
    except TypeError as exc:
        raise tr.fail(f"the type {tp!r}", str(exc)) from None
    if pydantic:
        schema, components = _pydantic_output(described)
    else:
        try:
            (schema,), components = msgspec.json.schema_components(
                [described], ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError) as exc:
            raise SchemaError(
                f"the return annotation {tp!r} has no JSON Schema ({_reason(exc)})"
            ) from exc
    components = dict(components)
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if ref and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/") :]
        target = components.get(name, {})
        if target.get("type") == "object":
            root = dict(components.pop(name))
            root.pop("title", None)
            if components:
                root["$defs"] = components
            _keep_declared_order(root, _choices([tp]))
            return root, False
    if isinstance(schema, dict) and schema.get("type") == "object":
        root = dict(schema)
        root.pop("title", None)
        if components:
            root["$defs"] = components
        _keep_declared_order(root, _choices([tp]))
        return root, False
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if components:
        wrapped["$defs"] = components
    _keep_declared_order(wrapped, _choices([tp]))
    return wrapped, True


def _pydantic_output(
    tp: Any, mode: Literal["validation", "serialization"] = "serialization"
) -> tuple[dict[str, Any], dict[str, Any]]:
    import pydantic

    try:
        schema = pydantic.TypeAdapter(tp).json_schema(
            mode=mode,
            ref_template="#/$defs/{model}",
            schema_generator=_pydantic_generator(),
        )
    except Exception as exc:
        raise SchemaError(f"pydantic cannot describe {tp!r}: {str(exc).splitlines()[0]}") from exc
    schema = dict(schema)
    return schema, dict(schema.pop("$defs", {}))


def _enc_hook(value: Any) -> Any:
    """What msgspec cannot encode: pydantic models and types (when pydantic is loaded)."""
    if _pydantic_loaded():
        import pydantic_core

        return pydantic_core.to_jsonable_python(value, by_alias=True)
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")


def to_json(value: Any) -> Any:
    """Typed Python values (dataclasses, enums, structs, pydantic models, …) as plain JSON
    values (object keys as strings, as they go on the wire)."""
    return msgspec.to_builtins(value, str_keys=True, enc_hook=_enc_hook)


def dumps_text(value: Any) -> str:
    """Compact JSON text of a JSON value."""
    return msgspec.json.encode(value).decode()


def json_copy(value: Any) -> Any:
    """``value`` as it would come back from JSON (typed values become plain JSON values)."""
    return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_enc_hook))


def convert(value: Any, tp: Any) -> Any:
    """JSON data as ``tp`` (pydantic converts to a pydantic type, msgspec to the others);
    `ArgumentError` naming the field when it does not fit."""
    if _uses_pydantic(tp):
        import pydantic

        try:
            return pydantic.TypeAdapter(tp).validate_python(value)
        except pydantic.ValidationError as exc:
            raise ArgumentError(_pydantic_errors(exc)) from None
    try:
        return msgspec.convert(value, tp, strict=False)
    except msgspec.ValidationError as exc:
        raise ArgumentError(str(exc)) from None


# --- elicitation forms ------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_FORM_TYPES = frozenset({"string", "number", "integer", "boolean"})
Convert = Callable[[dict[str, Any]], Any]


def elicitation_form(spec: Any) -> tuple[dict[str, Any], Convert]:
    """The ``requestedSchema`` for `Context.elicit` and how accepted content becomes its
    ``data``, for a type, a list of choices or ``None`` (`mcpline.elicit` serves mappings);
    `TypeError` for what no form can ask."""
    if spec is None:
        return {"type": "object", "properties": {}}, lambda content: None
    if isinstance(spec, (list, tuple)):
        if not spec or not all(isinstance(c, str) for c in spec):
            raise TypeError("a list of choices for ctx.elicit must hold strings")
        prop = {"type": "string", "enum": list(spec)}
        return _one_field(prop), lambda content: content["value"]
    try:
        hash(spec)
    except TypeError:
        return _typed_form.__wrapped__(spec)
    return _typed_form(spec)


def _one_field(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": prop}, "required": ["value"]}


@functools.lru_cache(maxsize=256)
def _typed_form(tp: Any) -> tuple[dict[str, Any], Convert]:
    if (
        tp in _SCALARS
        or typing.get_origin(tp) is typing.Literal
        or (_is_class(tp) and issubclass(tp, enum.Enum))
    ):
        (prop,), components = _schemas_of(tp)
        prop = _flat_property("value", _inline(prop, components))
        return _one_field(prop), lambda content: convert(content["value"], tp)
    if not (_is_class(tp) and (_has_fields(tp) or _is_pydantic(tp))):
        raise TypeError(
            f"ctx.elicit cannot ask for {tp!r}: give str, int, float, bool, a Literal or Enum, "
            "a dataclass, TypedDict, msgspec.Struct or pydantic model, a list of choices, or "
            "a requestedSchema"
        )
    (ref,), components = _schemas_of(tp)
    root = _inline(ref, components)
    props = {name: _flat_property(name, p) for name, p in root.get("properties", {}).items()}
    form: dict[str, Any] = {"type": "object", "properties": props}
    if root.get("required"):
        form["required"] = list(root["required"])
    if root.get("description"):
        form["description"] = root["description"]
    _keep_declared_order(form, _choices([tp]))
    return form, lambda content: convert(content, tp)


def _schemas_of(tp: Any) -> tuple[tuple[dict[str, Any]], dict[str, Any]]:
    if _uses_pydantic(tp):
        schema, components = _pydantic_output(tp, "validation")  # what the user fills in
        return (schema,), components
    (schema,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    _keep_declared_order(components, _choices([tp]))
    _keep_declared_order(schema, _choices([tp]))
    return (schema,), dict(components)


def _inline(node: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """``node`` with ``$ref``s into ``components`` replaced by their targets (no titles)."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(components.get(ref[len("#/$defs/") :], {}))
        target.pop("title", None)
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **rest}, components)
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _inline(v, components) for k, v in out["properties"].items()}
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [_inline(b, components) for b in out[key]]
    if isinstance(out.get("items"), dict):
        out["items"] = _inline(out["items"], components)
    return out


def _flat_property(name: str, prop: dict[str, Any]) -> dict[str, Any]:
    """One field of an elicitation form (an optional field loses its ``null``), or
    `TypeError` for a field no form can hold."""
    alts = prop.get("anyOf")
    if isinstance(alts, list):
        kept = [a for a in alts if a != {"type": "null"}]
        if len(kept) == 1:
            prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **kept[0]}
    values = prop.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        prop.setdefault("type", "string")
    kind = prop.get("type")
    items = prop.get("items")
    if kind in _FORM_TYPES or (
        kind == "array" and isinstance(items, dict) and isinstance(items.get("enum"), list)
    ):
        return {k: v for k, v in prop.items() if k != "default" or v is not None}
    raise TypeError(
        f"ctx.elicit: field {name!r} is not a string, number, integer, boolean or choice "
        "(an elicitation form is flat)"
    )


__all__ = [
    "ArgumentError",
    "convert",
    "elicitation_form",
    "json_copy",
    "check_bounds",
    "check_schema",
    "check_tool_input_schema",
    "DIALECTS",
    "dumps_text",
    "MAX_REPORTED_ERRORS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "McpHeader",
    "output_schema_for",
    "SchemaError",
    "Signature",
    "split_docstring",
    "to_json",
    "Validator",
]
