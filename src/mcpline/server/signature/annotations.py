"""What a type annotation says: the types and ``Annotated`` metadata inside it (`McpHeader`
among them), whether it needs pydantic, that metadata translated for msgspec or pydantic,
and the declared order of its ``Literal`` and ``Enum`` choices."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from .bounds import SchemaError


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


_FIELD_FIX = (
    "use Annotated[T, 'description'], Annotated[T, msgspec.Meta(...)] or, with pydantic "
    "installed, Annotated[T, pydantic.Field(...)]"
)


def pydantic_loaded() -> bool:
    """Whether pydantic was imported (by anyone): without it no pydantic object exists, so
    the schema modules never import it."""
    return "pydantic" in sys.modules


def is_class(tp: Any) -> bool:
    """A class, not a parametrized generic (``list[int]`` passes ``isinstance(_, type)`` on
    Python 3.10)."""
    return isinstance(tp, type) and typing.get_origin(tp) is None


def is_pydantic(obj: Any) -> bool:
    """Whether ``obj`` (a type or a metadata object) needs pydantic to be understood."""
    if not pydantic_loaded():
        return False
    cls = obj if is_class(obj) else type(obj)
    if cls.__module__.split(".")[0] in ("pydantic", "pydantic_core"):
        return True
    if is_class(obj):
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
    if is_class(tp) and not is_pydantic(tp) and has_fields(tp):
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception:
            return
        for hint in hints.values():
            yield from _walk(hint, seen)


def has_fields(cls: type) -> bool:
    return (
        dataclasses.is_dataclass(cls) or issubclass(cls, msgspec.Struct) or typing.is_typeddict(cls)
    )


def uses_pydantic(tp: Any, default: Any = inspect.Parameter.empty) -> bool:
    if not pydantic_loaded():
        return False
    if default is not inspect.Parameter.empty and is_pydantic(default):
        return True
    return any(is_pydantic(node) for node in _walk(tp))


def _annotated(base: Any, meta: list[Any]) -> Any:
    args = (base, *meta)
    return typing.Annotated[args]  # Annotated[base, *meta], valid on 3.10


def rebuild(tp: Any, fix: Callable[[list[Any]], list[Any]]) -> Any:
    """``tp`` with the metadata of every nested ``Annotated`` replaced by ``fix(metadata)``
    (and ``object``, which msgspec does not take, as ``Any``)."""
    if tp is object:
        return Any
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(tp)
        new = fix(list(meta))
        inner = rebuild(base, fix)
        return _annotated(inner, new) if new else inner
    args = _args_of(tp)
    if not args or origin is collections.abc.Callable:
        return tp
    new_args = tuple(rebuild(a, fix) for a in args)
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


class Translate:
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
            elif self.pydantic and (is_pydantic(m) or _is_annotated_types(m)):
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


def prepare(tp: Any, tr: Translate, doc: str | None, default: Any) -> Any:
    """A parameter's type with its metadata translated (and its docstring description,
    unless the annotation or a ``Field`` default gives one)."""
    meta: list[Any] = []
    base = tp
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
    try:
        base = rebuild(base, tr.nested)
    except TypeError as exc:
        raise tr.fail(f"the type {base!r}", str(exc)) from None
    extras = tr.items(meta, top=True)
    if doc and not _explicit_description(meta) and not getattr(default, "description", None):
        extras.append(tr.description(doc))
    return _annotated(base, extras) if extras else base


def choices(tps: list[Any]) -> list[list[Any]]:
    """The values of every ``Literal`` and ``Enum`` in ``tps``, in declaration order."""
    found: list[list[Any]] = []
    for tp in tps:
        for node in _walk(tp):
            if typing.get_origin(node) is typing.Literal:
                found.append([v.value if isinstance(v, enum.Enum) else v for v in node.__args__])
            elif is_class(node) and issubclass(node, enum.Enum):
                found.append([m.value for m in node])
    return found


def keep_declared_order(schema: Any, choices: list[list[Any]]) -> None:
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
