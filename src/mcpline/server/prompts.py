"""Prompts: typed functions whose arguments arrive as strings and whose value becomes messages.

Arguments come from the signature (required = no default; descriptions from the docstring's
``Args:`` section or ``Annotated[str, "…"]``). Values are strings on the wire and are
converted to the annotated types. The function may return a ``str`` (one user message), a
content block, a message dict (``{"role": …, "content": …}``, see `user`/`assistant`), a
list mixing those, or a full ``{"messages": […], "description": …}`` result.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import JsonRpcError
from ..spec import INVALID_PARAMS
from ._options import PromptDefinition, check_keywords
from ._userfn import RunSync, UserFunction, definition, wants_context
from .content import is_content_block, text
from .context import Context
from .signature import schema as _schema

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

ROLES = frozenset({"user", "assistant"})


def _content(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return text(content)
    if is_content_block(content):
        return dict(content)
    raise TypeError(f"prompt message content must be a string or a content block, not {content!r}")


def user(content: str | dict[str, Any]) -> dict[str, Any]:
    """A user message (``content`` is text or a content block)."""
    return {"role": "user", "content": _content(content)}


def assistant(content: str | dict[str, Any]) -> dict[str, Any]:
    """An assistant message (``content`` is text or a content block)."""
    return {"role": "assistant", "content": _content(content)}


@dataclass
class Prompt:
    """A registered prompt; `definition` is the ``Prompt`` object of ``prompts/list``."""

    name: str
    body: UserFunction
    definition: dict[str, Any]
    signature: _schema.Signature
    arguments: tuple[str, ...]
    required: frozenset[str]


def make_prompt(
    fn: Callable[..., Any], *, name: str | None = None, **spec: Unpack[PromptDefinition]
) -> Prompt:
    """Build a `Prompt` from a function (``spec``: `mcpline.server._options.PromptDefinition`);
    raises `ValueError` for an unusable definition."""
    check_keywords(PromptDefinition, spec, "make_prompt()")
    title, description = spec.get("title"), spec.get("description")
    argument_titles, icons, meta = spec.get("argument_titles"), spec.get("icons"), spec.get("meta")
    prompt_name = name or fn.__name__
    if not isinstance(prompt_name, str) or not prompt_name:
        raise ValueError("a prompt name must be a non-empty string")
    summary, arg_docs = _schema.split_docstring(inspect.getdoc(fn))
    desc = description if description is not None else summary
    signature = _schema.Signature(fn, name=prompt_name, skip=wants_context, arg_docs=arg_docs)
    props = signature.schema.get("properties", {})
    required = frozenset(signature.schema.get("required", []))
    titles = dict(argument_titles or {})
    unknown = set(titles) - set(signature.names)
    if unknown:
        raise ValueError(f"prompt {prompt_name!r}: argument_titles names unknown {sorted(unknown)}")
    args: list[dict[str, Any]] = []
    for arg in signature.names:
        entry: dict[str, Any] = {"name": arg}
        if arg in titles:
            entry["title"] = titles[arg]
        arg_desc = props.get(arg, {}).get("description")
        if arg_desc:
            entry["description"] = arg_desc
        entry["required"] = arg in required
        args.append(entry)
    return Prompt(
        name=prompt_name,
        body=UserFunction.of(fn, signature.context_param),
        definition=definition(
            {"name": prompt_name},
            title=title,
            description=desc,
            body={"arguments": args} if args else None,
            icons=icons,
            meta=meta,
        ),
        signature=signature,
        arguments=tuple(signature.names),
        required=required,
    )


def bind_arguments(prompt: Prompt, arguments: Any) -> dict[str, Any]:
    """Typed keyword arguments from the wire ``arguments``; -32602 for anything wrong."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
    bad = sorted(k for k, v in arguments.items() if not isinstance(v, str))
    if bad:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: prompt argument values are strings ({', '.join(bad)} is not)",
        )
    if not prompt.signature.var_kw:
        unknown = sorted(set(arguments) - set(prompt.arguments))
        if unknown:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Invalid params: prompt {prompt.name!r} has no argument "
                f"{', '.join(map(repr, unknown))}",
            )
    missing = sorted(prompt.required - set(arguments))
    if missing:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"Invalid params: prompt {prompt.name!r} is missing required argument "
            f"{', '.join(map(repr, missing))}",
        )
    try:
        return prompt.signature.bind(arguments)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise JsonRpcError(
            INVALID_PARAMS, f"Invalid params: bad argument for prompt {prompt.name!r}: {exc}"
        ) from None


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, str) or is_content_block(item):
        return user(item)
    if isinstance(item, dict) and "role" in item and "content" in item:
        if item["role"] not in ROLES:
            raise ValueError(
                f"a prompt message role is 'user' or 'assistant', not {item['role']!r}"
            )
        return {"role": item["role"], "content": _content(item["content"])}
    raise TypeError(
        "a prompt returns text, a content block, a {'role', 'content'} message or a list of "
        f"those; got {type(item).__name__}"
    )


def to_result(value: Any) -> dict[str, Any]:
    """A prompt function's return value as a ``GetPromptResult`` body."""
    if isinstance(value, dict) and "messages" in value and "role" not in value:
        out: dict[str, Any] = {"messages": [_message(m) for m in value["messages"]]}
        if value.get("description") is not None:
            out["description"] = str(value["description"])
        if value.get("_meta"):
            out["_meta"] = dict(value["_meta"])
        return out
    if isinstance(value, (list, tuple)):
        return {"messages": [_message(m) for m in value]}
    return {"messages": [_message(value)]}


async def render(
    prompt: Prompt,
    arguments: Any,
    ctx: Context,
    run_sync: RunSync,
) -> dict[str, Any]:
    """Validate the arguments, run the prompt and shape its messages.

    Exceptions from the prompt body propagate (the framework turns `InputRequired` into an
    MRTR result and anything unexpected into -32603).
    """
    value = await prompt.body.call(bind_arguments(prompt, arguments), ctx, run_sync)
    if isinstance(value, BaseException):
        raise value
    return to_result(value)


def check_name_param(params: dict[str, Any]) -> str:
    name = params.get("name")
    if not isinstance(name, str):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: prompts/get needs a string 'name'")
    return name


__all__ = ["Prompt", "assistant", "bind_arguments", "make_prompt", "render", "to_result", "user"]
