"""``mcpline check [--json] [--only GROUPS] [--fuzz N] [--seed S] -- SERVER_CMD...``."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    from ..check.registry import GROUPS

    p = sub.add_parser(
        "check",
        help="check any stdio MCP server against the 2026-07-28 stdio binding",
        description=(
            "Launch SERVER_CMD and check it, rule by rule: stdout purity and framing, the error "
            "table, server/discover, notifications, concurrency, cancellation, shutdown and the "
            "legacy handshake. Exit status 0 when no check failed, 1 otherwise, 2 on bad usage."
        ),
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON report instead of the human one"
    )
    p.add_argument(
        "--only",
        metavar="GROUPS",
        help=(
            f"comma-separated groups to run (default: all of {','.join(GROUPS)}; fuzz/soak run "
            "when asked for)"
        ),
    )
    p.add_argument(
        "--fuzz",
        type=int,
        default=0,
        metavar="N",
        help="also send N malformed/mutated/oversized lines",
    )
    p.add_argument(
        "--seed", type=int, default=0, metavar="S", help="fuzz seed (same seed, same lines)"
    )
    p.add_argument(
        "--soak",
        type=int,
        default=0,
        metavar="N",
        help="also send N valid requests, sampling the server's RSS",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long to wait for a reply (default 5)",
    )
    p.add_argument(
        "--exit-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long the server may take to exit after EOF or SIGTERM (default 5)",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="how long the first reply of a fresh server process may take (default 20)",
    )
    p.add_argument(
        "--verbose", "-v", action="store_true", help="show the rule and observation of every check"
    )
    p.add_argument(
        "server",
        nargs=argparse.REMAINDER,
        metavar="-- SERVER_CMD...",
        help="the command that starts the server",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..check.checker import Checker
    from ..check.model import FAIL
    from ..check.registry import ALL_GROUPS, GROUPS
    from ..check.report import summary_line, write_json, write_rich, write_text

    argv = list(args.server)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print(
            (
                "mcpline check: give the server command after --, e.g. mcpline check -- python "
                "server.py"
            ),
            file=sys.stderr,
        )
        return 2
    if args.only:
        groups = [g.strip() for g in args.only.split(",") if g.strip()]
        unknown = [g for g in groups if g not in ALL_GROUPS]
        if unknown:
            print(
                (
                    f"mcpline check: unknown group(s) {', '.join(unknown)}; choose from "
                    f"{', '.join(ALL_GROUPS)}"
                ),
                file=sys.stderr,
            )
            return 2
    else:
        groups = list(GROUPS)
    if args.fuzz > 0 and "fuzz" not in groups:
        groups.append("fuzz")
    if args.soak > 0 and "soak" not in groups:
        groups.append("soak")
    if args.fuzz < 0 or args.soak < 0 or args.timeout <= 0 or args.exit_timeout <= 0:
        print("mcpline check: --fuzz/--soak must be >= 0, the timeouts > 0", file=sys.stderr)
        return 2
    interactive = not args.json and sys.stderr.isatty()

    def progress(res: Any) -> None:
        if interactive:
            print(f"  {res.status:<4} {res.id}", file=sys.stderr)

    checker = Checker(
        argv,
        groups=groups,
        timeout=args.timeout,
        fuzz=args.fuzz,
        seed=args.seed,
        soak=args.soak,
        exit_timeout=args.exit_timeout,
        startup_timeout=args.startup_timeout,
        on_result=progress,
    )
    try:
        results = checker.run()
    except FileNotFoundError as exc:
        print(f"mcpline check: cannot start the server: {exc}", file=sys.stderr)
        return 2
    if args.json:
        write_json(sys.stdout, results, checker.facts, argv)
        print(summary_line(results, checker.facts), file=sys.stderr)
    elif sys.stdout.isatty():
        try:
            write_rich(results, checker.facts, argv, verbose=args.verbose)
        except ImportError:
            write_text(sys.stdout, results, checker.facts, argv, verbose=args.verbose)
    else:
        write_text(sys.stdout, results, checker.facts, argv, verbose=args.verbose)
    return 1 if any(r.status == FAIL for r in results) else 0
