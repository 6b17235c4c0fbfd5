"""Answers to the server's input requests (elicitation, sampling, roots) for ``call``, ``get``
and ``read``: asked on the terminal, read from ``--input``, or refused with a clear failure.

The command declares all three capabilities (elicitation in form and URL modes), so a server
asks rather than doing without. Roots are answered without asking: the current directory, or
each ``--root PATH``. The rest is asked on the terminal when stdin and stderr are one;
otherwise ``--input FILE`` (``-`` for stdin) gives the answers, in the format of `INPUT_HELP`;
without either, the first question ends the command (exit 2) with a line naming what was
asked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..protocol import MAX_INPUT_ROUNDS
from .form import answer_shape, schema_problem, summary
from .options import UsageError
from .suggest import did_you_mean

if TYPE_CHECKING:
    from .runner import Run
    from .tty import Terminal

INPUT_HELP = """\
answers to the server's questions:
  On a terminal, the server's questions are asked there (forms field by field, URLs to
  open, sampling replies typed by hand); roots are the current directory, or each --root.
  Elsewhere, --input FILE (- for stdin) holds the answers, as a JSON object:
    {"elicitation": [ANSWER, ...], "sampling": [REPLY, ...], "roots": [PATH, ...]}
  Each list is used in the order the server asks. An ANSWER is {"action": "accept",
  "content": {...}}, the content alone ({"name": "Ada"}), or "accept", "decline" or
  "cancel" ("accept" finishes a URL elicitation). A question for one value
  (ctx.elicit(message, int)) has one field, value: answer {"value": 42}. A REPLY is
  the reply's text, a whole CreateMessageResult, or {"action": "decline"} to refuse. A
  root is a path or a file:// URI (--root wins over these). Without a terminal or
  --input, a question ends the command (exit 2)."""

ELICIT_ACTIONS = ("accept", "decline", "cancel")


def input_options(p: argparse.ArgumentParser) -> None:
    """``--input`` and ``--root``, for the commands whose server may ask for input."""
    g = p.add_argument_group("answers to the server's questions")
    g.add_argument(
        "--input",
        metavar="FILE",
        help="answers as JSON (- for stdin) instead of asking on the terminal (format below)",
    )
    g.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PATH",
        help="a root to offer the server (repeatable; default: the current directory)",
    )
    g.add_argument(
        "--max-rounds",
        type=_rounds,
        default=MAX_INPUT_ROUNDS,
        metavar="N",
        help="rounds of questions one request may go through; the server asking once more "
        f"ends the command (exit 2; default {MAX_INPUT_ROUNDS})",
    )


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return value


def as_root(item: Any, where: str) -> dict[str, Any]:
    """A path, a URI or a Root object as a Root object (``file://`` URI of the absolute path)."""
    if isinstance(item, dict) and isinstance(item.get("uri"), str):
        return dict(item)
    if not isinstance(item, str) or not item:
        raise UsageError(f"{where}: a root is a path, a URI or an object with a uri")
    if "://" in item:
        return {"uri": item}
    path = Path(item).expanduser().resolve()
    return {"uri": path.as_uri(), "name": path.name or str(path)}


class Script:
    """The answers of an ``--input`` file, each list consumed in order."""

    def __init__(self, data: Any, where: str) -> None:
        self.where = where
        if not isinstance(data, dict):
            raise UsageError(f"{where} must hold a JSON object (see --help)")
        for key in data:
            if key not in ("elicitation", "sampling", "roots"):
                hint = did_you_mean(key, ["elicitation", "sampling", "roots"])
                raise UsageError(f"{where}: unknown key {key!r}{hint}")
        lists = {}
        for key in ("elicitation", "sampling", "roots"):
            value = data.get(key, [])
            if not isinstance(value, list):
                raise UsageError(f"{where}: {key} must be a list")
            lists[key] = value
        self.elicitation = deque(enumerate(lists["elicitation"], 1))
        self.sampling = deque(enumerate(lists["sampling"], 1))
        self.roots = (
            [as_root(r, f"{where} roots") for r in lists["roots"]] if "roots" in data else None
        )

    @classmethod
    def load(cls, path: str) -> Script:
        where = "--input -" if path == "-" else f"--input {path}"
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8-sig") as f:
                    text = f.read()
            return cls(json.loads(text), where)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {where}: {exc}") from None

    def _next(self, kind: str, params: dict[str, Any]) -> tuple[int, Any]:
        queue = self.elicitation if kind == "elicitation" else self.sampling
        if not queue:
            given = getattr(self, "_given_" + kind, 0)
            raise UsageError(
                f"the server asked for {summary(params) if kind == 'elicitation' else kind}, "
                f"but {self.where} has no {kind} answer left ({given} given)"
            )
        n, value = queue.popleft()
        setattr(self, "_given_" + kind, n)
        return n, value

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        n, value = self._next("elicitation", params)
        where = f"{self.where}: elicitation answer {n}"
        if isinstance(value, str) and value in ELICIT_ACTIONS:
            answer: dict[str, Any] = {"action": value}
        elif isinstance(value, dict) and "action" in value:
            if value["action"] not in ELICIT_ACTIONS:
                raise UsageError(f"{where}: action must be accept, decline or cancel")
            answer = dict(value)
        elif isinstance(value, dict):
            answer = {"action": "accept", "content": value}
        else:
            raise UsageError(
                f"{where}: an answer is an object or accept/decline/cancel{answer_shape(params)}"
            )
        if params.get("mode") == "url":
            answer.pop("content", None)
        elif answer["action"] == "accept":
            problem = schema_problem(params.get("requestedSchema"), answer.get("content", {}))
            if problem:
                raise UsageError(
                    f"{where} does not fit {summary(params)}: {problem}{answer_shape(params)}"
                )
        return answer

    def sample(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """The reply, or None for a refusal."""
        n, value = self._next("sampling", params)
        if isinstance(value, str):
            value = {"content": {"type": "text", "text": value}}
        if not isinstance(value, dict):
            raise UsageError(f"{self.where}: sampling reply {n} is not text or an object")
        if value.get("action") == "decline":
            return None
        reply = {"role": "assistant", "model": "human", **value}
        if isinstance(reply.get("content"), str):
            reply["content"] = {"type": "text", "text": reply["content"]}
        if not isinstance(reply.get("content"), (dict, list)):
            raise UsageError(f"{self.where}: sampling reply {n} has no content")
        return reply


class Answers:
    """The input callbacks of one command (`Client` options ``on_elicit`` and friends)."""

    def __init__(self, args: argparse.Namespace, run: Run) -> None:
        self.run = run
        self.command = args.command
        self.max_rounds: int = args.max_rounds
        self.script = Script.load(args.input) if args.input else None
        roots = self.script.roots if self.script is not None else None
        if args.root or roots is None:
            roots = [as_root(p, "--root") for p in args.root or ["."]]
        self.roots = roots
        self.terminal: Terminal | None = None
        self.era: str | None = None
        """The server's era, once known (a refusal is told to a legacy server only)."""
        if self.script is None and sys.stdin.isatty() and sys.stderr.isatty():
            from .tty import Terminal

            self.terminal = Terminal()
            run.mid_line = lambda: self.terminal is not None and self.terminal.mid_line

    @property
    def interactive(self) -> bool:
        return self.terminal is not None

    def options(self) -> dict[str, Any]:
        """Keyword arguments for `Client`."""
        return {
            "on_elicit": self.elicit,
            "on_sample": self.sample,
            "on_roots": self.list_roots,
            "elicitation_modes": ("form", "url"),
            "max_rounds": self.max_rounds,
        }

    def list_roots(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": self.roots}

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.script is not None:
            return self._scripted(self.script.elicit, params)  # type: ignore[no-any-return]
        if self.terminal is None:
            self._cannot(summary(params) + answer_shape(params))
        from . import ask

        with self._asking() as term:
            async with term.lock:
                if params.get("mode") == "url":
                    return await ask.url(term, params)
                return await ask.form(term, params)

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.script is not None:
            reply = self._scripted(self.script.sample, params)
            if reply is None:
                self._refuse("the --input file refuses the server's sampling request")
            return reply  # type: ignore[no-any-return]
        if self.terminal is None:
            self._cannot(f"sampling ({_first_text(params)})")
        from . import ask

        with self._asking() as term:
            async with term.lock:
                try:
                    return await ask.sampling(term, params)
                except ask.Refused as exc:
                    self._refuse(str(exc))

    @contextlib.contextmanager
    def _asking(self) -> Iterator[Terminal]:
        """The terminal, with the deadline's clock stopped meanwhile."""
        assert self.terminal is not None
        deadline = self.run.deadline
        if deadline is None:
            yield self.terminal
        else:
            with deadline.paused():
                yield self.terminal

    def _scripted(self, answer: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        try:
            return answer(params)
        except UsageError as exc:
            self._fail(exc)

    def _cannot(self, what: str) -> NoReturn:
        why = "stdin" if not sys.stdin.isatty() else "stderr (where questions are asked)"
        self._fail(
            UsageError(
                f"the server asked for {what}, but {why} is not a terminal: give the answers "
                f"with --input FILE (the format is in mcpline {self.command} --help)"
            )
        )

    def _refuse(self, why: str) -> NoReturn:
        """A refusal: a legacy server gets the spec's user-rejected error (-1); a modern one
        cannot be told (an input response is a result), so the command ends."""
        from ..client import InputDeclined

        if self.era == "legacy":
            raise InputDeclined(why)
        self._fail(InputDeclined(f"{why}; a 2026-07-28 server cannot be told, so it ends here"))

    def _fail(self, exc: Exception) -> NoReturn:
        """End the command with ``exc``; the server's request is answered as declined."""
        from ..client import InputDeclined

        self.run.stop(failure=exc)
        raise InputDeclined(str(exc))


def _first_text(params: dict[str, Any]) -> str:
    for message in params.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            return json.dumps(content["text"][:80], ensure_ascii=False)
    return "a reply"


__all__ = ["INPUT_HELP", "Answers", "Script", "as_root", "input_options"]
