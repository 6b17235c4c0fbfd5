"""The ``mcpline`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function; modules keep heavy imports inside their handlers."""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMAND_MODULES = ("run", "client_commands", "demo", "check", "bridge")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpline",
        description="Model Context Protocol 2026-07-28 over stdio, Unix sockets and TCP.",
    )
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
