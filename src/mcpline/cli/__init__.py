"""The ``mcpline`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function; modules keep heavy imports inside their handlers."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from .._version import version
from .suggest import did_you_mean

SUBCOMMAND_MODULES = ("run", "client_commands", "demo", "check", "bridge")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpline",
        description="Model Context Protocol 2026-07-28 over stdio, Unix sockets, TCP and "
        "Streamable HTTP.",
        epilog="A client command names its server as -- SERVER_CMD [ARGS...] (a stdio server: "
        "mcpline tools -- python server.py), --server ADDRESS (unix:/path, tcp:HOST:PORT or "
        "http(s)://HOST:PORT/mcp) or --config FILE --name NAME. "
        "See mcpline COMMAND --help and docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"mcpline {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.register(sub)
    return parser


def _check_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """An unknown subcommand is a usage error with the closest names (exit 2)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or argv.index(first) != 0:
        return  # an option first (--help, --version): argparse handles it
    # argparse lists its subcommands only on these private members (no public accessor).
    commands = [
        name
        for action in parser._actions  # noqa: SLF001 (argparse internals, see above)
        if isinstance(action, argparse._SubParsersAction)  # noqa: SLF001 (argparse internals)
        for name in action.choices
    ]
    if first not in commands:
        hint = did_you_mean(first, commands) or f" (commands: {', '.join(commands)})"
        parser.error(f"unknown command {first!r}{hint}")


def process_started() -> float:
    """When this process started, on the `time.monotonic` clock (Linux: from ``/proc``); now
    where that cannot be read or makes no sense (over a minute ago: a time namespace)."""
    now = time.monotonic()
    if sys.platform != "linux":
        return now
    try:
        with open("/proc/self/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0.0 <= age <= 60.0 else now


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (this process's own when omitted: its ``--timeout`` then
    counts from the process start, interpreter and imports included)."""
    started = process_started() if argv is None else time.monotonic()
    items = sys.argv[1:] if argv is None else argv
    try:
        parser = build_parser()
        _check_command(parser, items)
        args = parser.parse_args(items)
        args.started = started
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C before a command handles it (while importing, say)
        command = next((a for a in items if not a.startswith("-")), "")
        print(f"cancelled: mcpline {command}".rstrip(), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
