"""The command-line options every client subcommand shares, and how a subcommand is added.

A client command's server is ``-- SERVER_CMD [ARGS...]`` (everything after the first ``--``,
never our options), ``--server ADDRESS`` or ``--config FILE --name NAME``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

from ..spec import LOG_LEVELS

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2

SERVER_USAGE = "(-- SERVER_CMD [ARGS...] | --server ADDRESS | --config FILE --name NAME)"


class UsageError(Exception):
    """Bad command-line input (exit 2)."""


class DashDashParser(argparse.ArgumentParser):
    """Everything after the first ``--`` is the server command, never our options."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        items = list(sys.argv[1:] if args is None else args)
        tail: list[str] = []
        if "--" in items:
            i = items.index("--")
            items, tail = items[:i], items[i + 1 :]
        ns, extras = super().parse_known_args(items, namespace)
        ns.server_cmd = tail
        if isinstance(getattr(ns, "pairs", None), list):
            # KEY=VALUE words after an option: argparse leaves them over; they are arguments.
            words = [e for e in extras if "=" in e and not e.startswith("-")]
            ns.pairs += words
            extras = [e for e in extras if e not in words]
        if not (tail or getattr(ns, "server", None) or getattr(ns, "config", None)):
            self._suggest_dash_dash(items, ns, extras)
        return ns, extras

    def _suggest_dash_dash(self, items: list[str], ns: Any, extras: list[str]) -> None:
        """Words left over while no server is given are a server command without ``--``:
        exit 2 with the command line that has it."""
        strays = [e for e in extras if not e.startswith("-")]
        strays += [w for w in getattr(ns, "pairs", None) or [] if "=" not in w]
        if not strays:
            return
        positional = [
            value
            for action in self._actions
            if not action.option_strings and action.dest != "pairs"
            for value in [getattr(ns, action.dest, None)]
            if isinstance(value, str)
        ]
        at = len(items)
        for i, word in enumerate(items):
            if word in positional:
                positional.remove(word)
            elif word in strays:
                at = i
                break
        fixed = shlex.join([*items[:at], "--", *items[at:]])
        self.exit(
            EXIT_FAILURE,
            f"{self.prog}: a server command goes after --: {self.prog} {fixed}\n",
        )


DEFAULT_TIMEOUT = 60.0
"""``--timeout``'s default; also the request timeout of a ``listen`` given no ``--timeout``
(which then listens until interrupted)."""


def common(p: argparse.ArgumentParser, *, listening: bool = False) -> None:
    """Server selection, output and behaviour options (``listening``: ``listen``'s, whose
    ``--timeout`` is how long to listen)."""
    g = p.add_argument_group("server selection (one of)")
    g.add_argument(
        "--server",
        metavar="ADDRESS",
        help="connect to unix:PATH, tcp:HOST:PORT or an http(s)://HOST:PORT/mcp endpoint",
    )
    g.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for every request to an http(s) server (repeatable)",
    )
    g.add_argument(
        "--follow-cross-origin-redirects",
        action="store_true",
        help="http(s): follow a redirect to another origin when it re-sends no body, without "
        "the --header values (default: such a redirect is an error)",
    )
    g.add_argument(
        "--auth",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="OAuth for an http(s) server, e.g. grant=client_credentials, client_id=ID, "
        "client_secret_file=PATH, dpop=true (repeatable; see docs/auth.md)",
    )
    g.add_argument(
        "--token-file",
        metavar="PATH",
        help="the token of a tcp: server (default: $MCPLINE_TOKEN, else the file it wrote)",
    )
    g.add_argument("--config", metavar="FILE", help="an mcpServers JSON config file (with --name)")
    g.add_argument("--name", metavar="NAME", help="which server of --config to start")
    o = p.add_argument_group("output and behaviour")
    o.add_argument("--json", action="store_true", help="print JSON even on a terminal")
    o.add_argument(
        "--verbose", action="store_true", help="show the wire traffic and server stderr on stderr"
    )
    o.add_argument(
        "--timeout",
        type=float,
        default=None if listening else DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="listen this long once the server acknowledged, then exit 0 (default: until "
        "interrupted); the start must fit in it too, else it is a timeout (exit 2)"
        if listening
        else "deadline for the command's requests, server start and era probe included, "
        "time spent answering the server's questions on the terminal not (default 60)",
    )
    o.add_argument(
        "--era",
        choices=("auto", "modern", "legacy"),
        default="auto",
        help="skip era detection (default auto)",
    )
    logs = o.add_mutually_exclusive_group()
    logs.add_argument(
        "-q", "--quiet", action="store_true", help="do not show the server's log messages"
    )
    logs.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help="show the server's log messages (on stderr) at LEVEL and above: "
        f"{', '.join(LOG_LEVELS)} (default info)",
    )


def add_command(
    sub: Any,
    name: str,
    help_text: str,
    usage_args: str,
    run: Callable[[argparse.Namespace], int],
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """A client subcommand whose handler is ``run(args)``."""
    p = sub.add_parser(
        name,
        help=help_text,
        description=help_text,
        usage=f"mcpline {name} {usage_args}[options] {SERVER_USAGE}",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.__class__ = DashDashParser
    p.set_defaults(func=run, server_cmd=[])
    return p  # type: ignore[no-any-return]


__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "DEFAULT_TIMEOUT",
    "SERVER_USAGE",
    "DashDashParser",
    "UsageError",
    "add_command",
    "common",
]
