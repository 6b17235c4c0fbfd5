"""``mcpline run FILE[:OBJECT] [--listen ADDRESS | --http HOST:PORT] [--bus URL]``: serve a
server defined in a Python file, on a transport of `mcpline.transports.table` (its flags are
that table's)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from ..server.loading import load_server
from ..transports.table import FLAGS, TRANSPORTS, Flag, Row, row_for, takers


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="serve the mcpline Server defined in a Python file")
    p.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="a .py file, optionally with the name of its Server object",
    )
    p.add_argument(
        "--listen",
        metavar="ADDRESS",
        default="stdio",
        help=", ".join(row.form for row in TRANSPORTS.values()) + " (default: stdio)",
    )
    p.add_argument(
        "--bus",
        metavar="URL",
        help="a Redis (redis://HOST:PORT/DB) that carries list changes and resource updates "
        "between the processes of this server and records used requestStates, where the file "
        "sets none (default: $MCPLINE_BUS_URL; see docs/scale-out.md; needs mcpline[redis])",
    )
    p.add_argument(
        "--task-quota",
        metavar="SPEC",
        help="what tasks may keep, e.g. tasks=100,bytes=32MiB,anonymous_tasks=10 (per "
        "principal, anonymous callers together, and total_* for the server; default: "
        "$MCPLINE_TASK_QUOTA, else 256 tasks and 64 MiB a principal; see docs/tasks.md)",
    )
    for row in TRANSPORTS.values():
        if row.shorthand is not None:
            _add(p, row.shorthand)
    g = p.add_argument_group(
        "transport flags (each names the transports that take it; see docs/sockets.md and "
        "docs/http.md)"
    )
    for flag in FLAGS.values():
        _add(g, flag, ", ".join(takers(flag)) + ": ")
    p.set_defaults(func=run)


def _usage(message: str) -> NoReturn:
    print(f"mcpline run: {message}", file=sys.stderr)
    raise SystemExit(2)


def bus_url(args: argparse.Namespace) -> str | None:
    """``--bus`` or ``$MCPLINE_BUS_URL``, checked, and put in the environment (where the
    workers of ``--workers N`` find it); SystemExit(2) on a bad one."""
    from ..server.scale.attach import BUS_ENV, check_url

    url = args.bus if args.bus is not None else os.environ.get(BUS_ENV)
    if not url:
        return None
    try:
        check_url(url)
    except (ValueError, ImportError) as exc:
        _usage(str(exc))
    os.environ[BUS_ENV] = url
    return url


def load_with_bus(target: str, url: str | None) -> Any:
    """`load_server`, then the bus and ledger of ``url`` where the file set none (a note on
    stderr when the file's own bus is kept)."""
    server = load_server(target)
    if url:
        from ..server.scale.attach import attach

        if not attach(server, url).bus:
            print(
                "mcpline run: note: the server has its own bus, which it keeps (--bus serves "
                "only as its nonce ledger, if it had a process-local one)",
                file=sys.stderr,
                flush=True,
            )
    return server


def task_quota(args: argparse.Namespace) -> None:
    """``--task-quota``, checked, put in the environment where `Server` (and every worker of
    ``--workers N``) reads it; SystemExit(2) on a bad one."""
    if args.task_quota is None:
        return
    from ..server.tasks.quota import QUOTA_ENV, TaskQuota

    try:
        TaskQuota.parse(args.task_quota)
    except ValueError as exc:
        _usage(f"--task-quota: {exc}")
    os.environ[QUOTA_ENV] = args.task_quota


def _add(group: Any, flag: Flag, prefix: str = "") -> None:
    kwargs: dict[str, Any] = {"help": prefix + flag.help, "dest": flag.dest}
    if flag.action is not None:
        kwargs["action"] = flag.action
    if flag.metavar is not None:
        kwargs["metavar"] = flag.metavar
    if flag.type is not None:
        kwargs["type"] = flag.type
    group.add_argument(flag.name, **kwargs)


def chosen_row(args: argparse.Namespace) -> tuple[str, Row]:
    """The address ``--listen`` (or a row's shorthand flag) names and its row;
    SystemExit(2) when it is none or two of them are given."""
    address: str = args.listen
    short = [row for row in TRANSPORTS.values() if row.shorthand and _given(args, row.shorthand)]
    if short:
        row = short[0]
        assert row.shorthand is not None
        if address != "stdio" or len(short) > 1:
            _usage(f"{row.shorthand.name} and --listen exclude each other")
        try:
            address = row.load().shorthand(getattr(args, row.shorthand.dest))
        except ValueError as exc:
            _usage(str(exc))
        return address, row
    try:
        return address, row_for(address)
    except ValueError as exc:
        _usage(str(exc))


def flag_options(args: argparse.Namespace, row: Row) -> dict[str, Any]:
    """The options of the transport flags given, by `Flag.key`; SystemExit(2) for a flag
    the row does not take or a value it must not have."""
    given = [flag for flag in FLAGS.values() if _given(args, flag)]
    wrong = [flag for flag in given if flag.name not in row.flags]
    if wrong:
        names = ", ".join(flag.name for flag in wrong)
        takers = sorted(
            {
                other.scheme
                for flag in wrong
                for other in TRANSPORTS.values()
                if flag.name in other.flags
            }
        )
        _usage(f"{names}: not for {row.scheme} (only for {', '.join(takers)})")
    options: dict[str, Any] = {}
    for flag in given:
        value = getattr(args, flag.dest)
        if flag.positive and not value > 0:
            _usage(f"{flag.name} must be positive")
        options[flag.key] = value
    return options


def _given(args: argparse.Namespace, flag: Flag) -> bool:
    value = getattr(args, flag.dest)
    return value is not None and value is not False


def run(args: argparse.Namespace) -> int:
    from ..protocol.state import env_key_problem

    if (problem := env_key_problem()) is not None:
        _usage(problem)
    task_quota(args)
    address, row = chosen_row(args)
    given = flag_options(args, row)
    transport = row.load()
    try:
        options = transport.options(given, address)
    except ValueError as exc:
        _usage(str(exc))
    url = bus_url(args)
    transport.serve_file(args.target, address, lambda target: load_with_bus(target, url), **options)
    return 0
