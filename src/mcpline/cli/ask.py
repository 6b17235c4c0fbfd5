"""The server's input requests asked on the terminal: a form field by field, a URL to open,
a sampling request to answer by hand. Everything the server wrote is shown through
`for_terminal` (labels and hints folded to one line); prompts go to stderr, never stdout."""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from ..terminal import for_terminal
from .form import BadValue, Field, fields
from .output import one_line
from .tty import Terminal, in_daemon_thread

ACTIONS = {"y": "accept", "n": "decline", "c": "cancel"}
_SKIP = object()
_CANCEL = object()


class Refused(Exception):
    """The user refused a sampling request."""


def _safe(text: Any) -> str:
    return for_terminal(str(text))


def _short(text: Any) -> str:
    return for_terminal(one_line(str(text)))


async def choose(term: Terminal, prompt: str, choices: dict[str, str]) -> str:
    """One of ``choices`` (by first letter; Enter is the first); ``cancel`` at end of input."""
    first = next(iter(choices.values()))
    while True:
        text = await term.ask(prompt)
        if text is None:
            return "cancel"
        letter = text.strip()[:1].lower()
        if not letter:
            return first
        if letter in choices:
            return choices[letter]
        term.write(f"  type one of {', '.join(choices)} (or press Enter for {first})\n")


async def form(term: Terminal, params: dict[str, Any]) -> dict[str, Any]:
    """A form elicitation: accept, decline or cancel, then each field in turn."""
    items = fields(params.get("requestedSchema"))
    if len(items) == 1 and items[0].kind == "boolean":
        return await _yes_no(term, str(params.get("message", "")), items[0])
    term.write(f"\nThe server asks: {_safe(params.get('message', ''))}\n")
    question = "Fill in the form?" if items else "Accept?"
    action = await choose(term, f"{question} [Y]es, [n]o (decline), [c]ancel: ", ACTIONS)
    if action != "accept":
        return {"action": action}
    term.write("  (Enter takes the default or skips an optional field; Ctrl-D cancels)\n")
    content: dict[str, Any] = {}
    for item in items:
        value = await _field(term, item)
        if value is _CANCEL:
            return {"action": "cancel"}
        if value is not _SKIP:
            content[item.key] = value
    return {"action": "accept", "content": content}


async def _yes_no(term: Terminal, message: str, item: Field) -> dict[str, Any]:
    """A form of one yes/no field, asked as its question: yes and no are answers (accepted),
    decline and cancel what they are; Enter takes the field's default, if any."""
    default = item.default if item.has_default and isinstance(item.default, bool) else None
    yes = "[Y]es" if default is True else "[y]es"
    no = "[N]o" if default is False else "[n]o"
    description = item.schema.get("description")
    if isinstance(description, str) and description:
        term.write(f"\n  {_safe(description)}\n")
    prompt = f"\n{_short(message) or _short(item.label())} {yes}, {no}, [d]ecline, [c]ancel: "
    while True:
        text = await term.ask(prompt)
        if text is None:
            return {"action": "cancel"}
        letter = text.strip()[:1].lower()
        if letter in ("y", "n") or (not letter and default is not None):
            value = letter == "y" if letter else default
            return {"action": "accept", "content": {item.key: value}}
        if letter == "d":
            return {"action": "decline"}
        if letter == "c":
            return {"action": "cancel"}
        prompt = "  type y or n (or d to decline, c to cancel): "


async def _field(term: Terminal, item: Field) -> Any:
    """The value typed for ``item``, ``_SKIP`` for an optional one left out, ``_CANCEL``."""
    description = item.schema.get("description")
    if isinstance(description, str) and description:
        term.write(f"  {_safe(description)}\n")
    for i, (value, label) in enumerate(item.options, 1):
        extra = f" ({_short(value)})" if label != value else ""
        term.write(f"    {i}) {_short(label)}{extra}\n")
    prompt = f"{_short(item.label())} ({_short(item.hint())}): "
    while True:
        text = await term.ask(prompt)
        if text is None:
            return _CANCEL
        if not text.strip():
            if item.has_default:
                return item.default
            if not item.required:
                return _SKIP
            term.write("  a value is required\n")
            continue
        try:
            value = item.parse(text)
        except BadValue as exc:
            term.write(f"  {_short(exc)}; try again\n")
            continue
        problem = item.problem(value)
        if problem is not None:
            term.write(f"  {_short(problem)}; try again\n")
            continue
        return value


async def url(term: Terminal, params: dict[str, Any]) -> dict[str, Any]:
    """A URL elicitation: show the URL and its site, offer to open it, wait until done."""
    address = str(params.get("url", ""))
    parts = urlsplit(address)
    term.write(f"\nThe server asks you to open a URL: {_safe(params.get('message', ''))}\n")
    term.write(f"  {_short(address)}\n  (site: {_short(parts.hostname or '?')})\n")
    if parts.scheme in ("http", "https"):
        prompt = "Open it in your browser? [Y]es, [s]elf (I'll open it), [n]o (decline), [c]ancel: "
        choices = {"y": "open", "s": "self", "n": "decline", "c": "cancel"}
    else:
        term.write("  (not an http(s) URL: it is not opened for you)\n")
        prompt = "Go there yourself? [Y]es, [n]o (decline), [c]ancel: "
        choices = {"y": "self", "n": "decline", "c": "cancel"}
    action = await choose(term, prompt, choices)
    if action in ("decline", "cancel"):
        return {"action": action}
    if action == "open":
        opened = await in_daemon_thread(lambda: _open_browser(address))
        term.write("  opened in your browser\n" if opened else "  no browser: open it yourself\n")
    done = await term.ask("Press Enter once you have finished there (c to cancel): ")
    if done is None or done.strip().lower().startswith("c"):
        return {"action": "cancel"}
    return {"action": "accept"}


def _open_browser(address: str) -> bool:
    """`webbrowser.open` with fd 1 pointed at stderr meanwhile: a browser that prints
    ("Opening in existing browser session.") cannot mix into the command's output."""
    import webbrowser

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        return webbrowser.open(address)
    except webbrowser.Error:
        return False
    finally:
        os.dup2(saved, 1)
        os.close(saved)


async def sampling(term: Terminal, params: dict[str, Any]) -> dict[str, Any]:
    """A sampling request: show it, take the reply typed by the user (`Refused` if none)."""
    term.write(
        "\nThe server asks for a language model's reply (sampling), "
        f"at most {_short(params.get('maxTokens', '?'))} tokens:\n"
    )
    if params.get("systemPrompt"):
        term.write(f"  system: {_safe(params['systemPrompt'])}\n")
    for message in params.get("messages") or []:
        if isinstance(message, dict):
            role = _short(message.get("role", "?"))
            term.write(f"  {role}: {_safe(_content_text(message.get('content')))}\n")
    term.write("Type the reply; end it with an empty line. An empty reply refuses the request.\n")
    lines: list[str] = []
    while True:
        line = await term.ask("> ")
        if not line:  # an empty line, or the end of input
            break
        lines.append(line)
    if not lines:
        raise Refused("the user refused the server's sampling request")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "\n".join(lines)},
        "model": "human",
        "stopReason": "endTurn",
    }


def _content_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    out = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            out.append(f"[{block.get('type', '?')} {block.get('mimeType', '')}]".replace(" ]", "]"))
        else:
            out.append(json.dumps(block, ensure_ascii=False))
    return " ".join(out)


__all__ = ["Refused", "choose", "form", "sampling", "url"]
