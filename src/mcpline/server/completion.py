"""``completion/complete``: suggestions for prompt arguments and resource-template variables.

Register completers with ``@server.completion(prompt="name", argument="arg")`` (or
``resource="scheme://{template}"``); leave out ``argument`` to serve every argument of that
prompt/template, or leave out everything for a catch-all. A completer takes any of these
parameters by name: ``value`` (the partial text), ``argument`` (the argument's name),
``context`` (the other arguments already chosen, ``dict[str, str]``), ``ref`` (the raw
reference) and a `Context` by annotation. It returns an iterable of strings or a
`Completion`. Arguments typed as ``Literal[...]`` or an ``Enum`` complete themselves.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcError
from ..spec import INVALID_PARAMS
from ._userfn import RunSync, UserFunction, wants_context
from .context import Context

if TYPE_CHECKING:
    from .prompts import Prompt
    from .resources import Resource

MAX_VALUES = 100
COMPLETER_PARAMS = frozenset({"value", "argument", "context", "ref"})


@dataclass
class Completion:
    """Suggestions plus, optionally, how many exist in all and whether more are available."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


@dataclass
class Completer:
    body: UserFunction
    params: frozenset[str]


Key = tuple[str | None, str | None, str | None]
"""(``"ref/prompt"``/``"ref/resource"``, prompt name or template, argument)."""


def make_completer(fn: Callable[..., Any]) -> Completer:
    hints = typing.get_type_hints(fn, include_extras=True)
    params: set[str] = set()
    context_param: str | None = None
    for pname, p in inspect.signature(fn).parameters.items():
        if wants_context(hints.get(pname)):
            context_param = pname
        elif pname in COMPLETER_PARAMS:
            params.add(pname)
        elif p.default is inspect.Parameter.empty and p.kind not in (
            p.VAR_KEYWORD,
            p.VAR_POSITIONAL,
        ):
            raise ValueError(
                f"completer {getattr(fn, '__name__', fn)!r}: parameter {pname!r} is not one of "
                f"{', '.join(sorted(COMPLETER_PARAMS))}"
            )
    return Completer(UserFunction.of(fn, context_param), frozenset(params))


class Completions:
    """The completers of one server, keyed by what they complete."""

    def __init__(self) -> None:
        self.completers: dict[Key, Completer] = {}

    def __bool__(self) -> bool:
        return bool(self.completers)

    def add(
        self,
        fn: Callable[..., Any],
        *,
        prompt: str | None = None,
        resource: str | None = None,
        argument: str | None = None,
    ) -> Completer:
        if prompt is not None and resource is not None:
            raise ValueError("a completer is for a prompt or for a resource template, not both")
        if argument is not None and prompt is None and resource is None:
            raise ValueError("argument= needs prompt= or resource=")
        kind = (
            "ref/prompt" if prompt is not None else "ref/resource" if resource is not None else None
        )
        key: Key = (kind, prompt if prompt is not None else resource, argument)
        if key in self.completers:
            raise ValueError(f"a completer for {key} is already registered")
        completer = make_completer(fn)
        self.completers[key] = completer
        return completer

    def find(self, kind: str, target: str, argument: str) -> Completer | None:
        for key in ((kind, target, argument), (kind, target, None), (None, None, None)):
            found = self.completers.get(key)
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class Query:
    """A validated ``completion/complete`` request."""

    kind: str
    target: str
    """The prompt name or the resource URI/template."""
    argument: str
    value: str
    context: dict[str, str]
    ref: dict[str, Any]


def _bad(message: str) -> JsonRpcError:
    return JsonRpcError(INVALID_PARAMS, f"Invalid params: {message}")


def parse_query(params: dict[str, Any]) -> Query:
    ref = params.get("ref")
    if not isinstance(ref, dict):
        raise _bad("completion/complete needs a 'ref' object")
    kind = ref.get("type")
    if kind == "ref/prompt":
        target = ref.get("name")
        if not isinstance(target, str):
            raise _bad("a ref/prompt needs a string 'name'")
    elif kind == "ref/resource":
        target = ref.get("uri")
        if not isinstance(target, str):
            raise _bad("a ref/resource needs a string 'uri'")
    else:
        raise _bad(f"ref.type must be 'ref/prompt' or 'ref/resource', not {kind!r}")
    arg = params.get("argument")
    if (
        not isinstance(arg, dict)
        or not isinstance(arg.get("name"), str)
        or not isinstance(arg.get("value"), str)
    ):
        raise _bad("'argument' must be an object with string 'name' and 'value'")
    ctx_args: dict[str, str] = {}
    context = params.get("context")
    if context is not None:
        if not isinstance(context, dict):
            raise _bad("'context' must be an object")
        raw = context.get("arguments")
        if raw is not None:
            if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
                raise _bad("'context.arguments' must map names to strings")
            ctx_args = dict(raw)
    return Query(kind, target, arg["name"], arg["value"], ctx_args, dict(ref))


def known_arguments(
    kind: str, target: str, prompts: dict[str, Prompt], templates: dict[str, Resource]
) -> tuple[str, ...]:
    """The arguments a ref can complete; -32602 when the ref names nothing we serve."""
    if kind == "ref/prompt":
        prompt = prompts.get(target)
        if prompt is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {target!r}", {"name": target})
        return prompt.arguments
    res = templates.get(target)
    if res is None or res.template is None:
        raise JsonRpcError(
            INVALID_PARAMS, f"Unknown resource template: {target!r}", {"uri": target}
        )
    return res.template.variables


def enum_values(schema: dict[str, Any]) -> list[str] | None:
    """The choices of a ``Literal``/``Enum`` argument, as strings (``None`` if open-ended)."""
    choices = schema.get("enum")
    if choices is None and "$ref" not in schema:
        alts = schema.get("anyOf") or schema.get("oneOf")
        if alts and all("const" in a for a in alts):
            choices = [a["const"] for a in alts]
    if not choices:
        return None
    return [
        c if isinstance(c, str) else str(c).lower() if isinstance(c, bool) else str(c)
        for c in choices
    ]


def choices_for(schema: dict[str, Any] | None, name: str) -> list[str] | None:
    """The closed set of values of argument ``name`` in a signature's JSON Schema."""
    if not schema:
        return None
    prop = schema.get("properties", {}).get(name)
    if not isinstance(prop, dict):
        return None
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = schema.get("$defs", {}).get(ref[len("#/$defs/") :], {})
    return enum_values(prop)


def shape(value: Any) -> dict[str, Any]:
    """A completer's answer as the ``completion`` object (at most `MAX_VALUES` values)."""
    if isinstance(value, Completion):
        values = list(value.values)
        total, has_more = value.total, value.has_more
    elif isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(
            f"a completer returns an iterable of strings or a Completion, not {value!r}"
        )
    else:
        values = list(value)
        total, has_more = len(values), None
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise TypeError(f"completion values must be strings, got {bad[0]!r}")
    if len(values) > MAX_VALUES:
        if total is None or total < len(values):
            total = len(values)
        values = values[:MAX_VALUES]
        has_more = True
    out: dict[str, Any] = {"values": values}
    if total is not None:
        out["total"] = total
    out["hasMore"] = (
        bool(has_more) if has_more is not None else (total is not None and total > len(values))
    )
    return out


async def run(
    completer: Completer,
    query: Query,
    ctx: Context,
    run_sync: RunSync,
) -> dict[str, Any]:
    available: dict[str, Any] = {
        "value": query.value,
        "argument": query.argument,
        "context": dict(query.context),
        "ref": dict(query.ref),
    }
    kwargs = {k: v for k, v in available.items() if k in completer.params}
    return shape(await completer.body.call(kwargs, ctx, run_sync))


def prefix_filter(choices: Iterable[str], value: str) -> list[str]:
    """Choices starting with ``value`` (case-insensitively), in their original order."""
    low = value.lower()
    return [c for c in choices if c.lower().startswith(low)]


__all__ = [
    "choices_for",
    "Completer",
    "COMPLETER_PARAMS",
    "Completion",
    "Completions",
    "enum_values",
    "Key",
    "known_arguments",
    "make_completer",
    "MAX_VALUES",
    "parse_query",
    "prefix_filter",
    "Query",
    "run",
    "shape",
]
