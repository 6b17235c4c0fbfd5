"""The commands that run something on the server: ``call``, ``get`` and ``read`` (whose
server may ask the user for input on the way: see `answers`) and ``complete``.

A name the server does not know gets a suggestion: the list is fetched only once the server
has refused the name, so the usual case costs no extra request (``call`` with KEY=VALUE
words lists the tools first anyway, for their input schemas).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..spec import COMPLETE, PROMPTS_GET, RESOURCES_READ, TOOLS_CALL, TOOLS_LIST
from .arguments import json_object, prompt_arguments, split_pairs, tool_arguments
from .connect import make_client, require
from .options import EXIT_OK, EXIT_TOOL_ERROR, UsageError
from .output import ProgressBar, emit_json, human_call, one_line, pretty, say, wants_json
from .suggest import unknown
from .task_status import TaskStatus

if TYPE_CHECKING:
    from ..client import Client, ServerError
    from .answers import Answers
    from .runner import Run


def _answers(args: argparse.Namespace, run: Run) -> Answers:
    """The answers to the server's questions; on a terminal ``--timeout`` is then kept by
    ``run``, so that the time the user takes is not counted."""
    from .answers import Answers

    answers = Answers(args, run)
    if answers.interactive:
        run.keep_deadline()
    return answers


def _unbounded(answers: Answers) -> dict[str, Any]:
    """Request options: none of the client's own timeouts while the user may be asked (the
    run's pausable deadline bounds the command)."""
    return {"timeout": None, "max_timeout": None} if answers.interactive else {}


async def _named(client: Client, kind: str, name: str, exc: ServerError) -> Exception:
    """``exc`` as "unknown tool 'ad'; did you mean 'add'?" when ``name`` is indeed not in
    the server's list; ``exc`` itself otherwise (or when the list cannot be had)."""
    try:
        if kind == "tool":
            items = await client.list_tools()
        elif kind == "prompt":
            items = await client.list_prompts()
        else:
            items = await client.list_resource_templates()
    except Exception:
        return exc
    key = "uriTemplate" if kind == "resource template" else "name"
    names = [i[key] for i in items if isinstance(i, dict) and isinstance(i.get(key), str)]
    if name in names:
        return exc
    return UsageError(f"{unknown(kind, name, names)} ({one_line(str(exc))})")


async def call(args: argparse.Namespace, run: Run) -> int:
    from ..client import ServerError

    arguments = json_object(args.args, "the tool arguments")
    split_pairs(args.pairs)  # a malformed word fails before the server starts
    run.doing(TOOLS_CALL, args.tool)
    answers = _answers(args, run)
    bar = ProgressBar(args.tool)
    status = TaskStatus(args.tool)  # a task the server makes of the call
    async with make_client(args, run, answers) as client:
        answers.era = (await require(client, "tools")).era
        if args.pairs:
            run.doing(TOOLS_LIST)
            listed = {
                t["name"]: t
                for t in await client.list_tools()
                if isinstance(t, dict) and isinstance(t.get("name"), str)
            }
            if args.tool not in listed:
                raise UsageError(unknown("tool", args.tool, list(listed)))
            schema = listed[args.tool].get("inputSchema")
            arguments = tool_arguments(arguments, args.pairs, schema, args.tool)
        run.doing(TOOLS_CALL, args.tool)
        try:
            result = await client.call_tool(
                args.tool,
                arguments,
                on_progress=bar if bar.enabled else None,
                on_task=status if status.enabled else None,
                **_unbounded(answers),
            )
        except ServerError as exc:
            raise await _named(client, "tool", args.tool, exc) from None
        finally:
            bar.done()
            status.done()
    if wants_json(args):
        emit_json(result)
    else:
        human_call(result)
    return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_OK


async def read(args: argparse.Namespace, run: Run) -> int:
    run.doing(RESOURCES_READ, args.uri)
    answers = _answers(args, run)
    async with make_client(args, run, answers) as client:
        answers.era = (await require(client, "resources")).era
        result = await client.request(RESOURCES_READ, {"uri": args.uri}, **_unbounded(answers))
    if wants_json(args):
        emit_json(result)
    else:
        for c in result.get("contents", []):
            if "text" in c:
                say(pretty(c["text"]))
            else:
                say(
                    f"[{c.get('mimeType', 'binary')} blob, {len(c.get('blob', ''))} "
                    f"base64 chars] {c.get('uri', '')}"
                )
    return EXIT_OK


async def get(args: argparse.Namespace, run: Run) -> int:
    from ..client import ServerError

    arguments = prompt_arguments(json_object(args.args, "the prompt arguments"), args.pairs)
    run.doing(PROMPTS_GET, args.prompt)
    answers = _answers(args, run)
    async with make_client(args, run, answers) as client:
        answers.era = (await require(client, "prompts")).era
        params = {"name": args.prompt, "arguments": arguments}
        try:
            result = await client.request(PROMPTS_GET, params, **_unbounded(answers))
        except ServerError as exc:
            raise await _named(client, "prompt", args.prompt, exc) from None
    if wants_json(args):
        emit_json(result)
    else:
        for m in result.get("messages", []):
            content = m.get("content") or {}
            text = content.get("text") if isinstance(content, dict) else None
            say(f"{m.get('role', '?')}: {text if text is not None else json.dumps(content)}")
    return EXIT_OK


async def complete(args: argparse.Namespace, run: Run) -> int:
    """``completion/complete`` for a prompt argument or a resource template variable."""
    from ..client import ServerError

    context = prompt_arguments({}, args.context)
    if args.kind == "prompt":
        ref, kind = {"type": "ref/prompt", "name": args.ref}, "prompt"
    else:
        ref, kind = {"type": "ref/resource", "uri": args.ref}, "resource template"
    run.doing(COMPLETE, f"{args.ref} {args.argument}")
    async with make_client(args, run) as client:
        await require(client, "completions")
        try:
            result = await client.complete(
                ref,
                {"name": args.argument, "value": args.value},
                {"arguments": context} if context else None,
            )
        except ServerError as exc:
            raise await _named(client, kind, args.ref, exc) from None
    if wants_json(args):
        emit_json(result)
        return EXIT_OK
    completion = result.get("completion") or {}
    values = completion.get("values") or []
    for value in values:
        say(str(value))
    total = completion.get("total")
    if isinstance(total, int) and total > len(values):
        say(f"({len(values)} of {total} shown)")
    elif completion.get("hasMore"):
        say("(more are available)")
    return EXIT_OK


__all__ = ["call", "complete", "get", "read"]
