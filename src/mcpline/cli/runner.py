"""Running one client operation: the event loop, signals, and every failure mapped to an exit
code with one line on stderr (2 for a protocol, transport or usage failure)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from .options import EXIT_FAILURE, EXIT_OK, UsageError
from .output import note, one_line

Operation = Callable[[argparse.Namespace], Awaitable[int]]


def main_for(args: argparse.Namespace, op: Operation) -> int:
    """Run one client operation; map failures to exit code 2 with one line on stderr."""
    from ..client import ClientError

    _configure_logging(args.verbose)
    try:
        return asyncio.run(_guarded(args, op))
    except UsageError as exc:
        note(f"mcpline {args.command}: {exc}")
        return EXIT_FAILURE
    except ClientError as exc:
        note(f"mcpline {args.command}: {one_line(str(exc))}")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_OK if args.command == "listen" else EXIT_FAILURE
    except BrokenPipeError:
        # Whoever read our stdout went away (`| head`). Point fd 1 at /dev/null so the
        # final flush at exit cannot raise again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.command == "listen":
            return EXIT_OK  # like an interruption: the listener stops
        print(
            f"mcpline {args.command}: stdout was closed before the output was written",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except Exception as exc:
        # Typically a result whose shape the human-readable view cannot show.
        if args.verbose:
            import traceback

            traceback.print_exc()
        why = one_line(f"{type(exc).__name__}: {exc}")
        note(f"mcpline {args.command}: unexpected response from the server ({why})")
        return EXIT_FAILURE


def _configure_logging(verbose: bool) -> None:
    """Library warnings (restarts, skipped lines) only with --verbose: stderr stays one line."""
    import logging

    if verbose:
        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="mcpline: %(message)s")
        logging.getLogger("mcpline.client.server_stderr").setLevel(logging.WARNING)
        # Request lines would show URLs, whose query may hold a key.
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    else:
        logging.getLogger("mcpline").setLevel(logging.CRITICAL)


async def _guarded(args: argparse.Namespace, op: Operation) -> int:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    stopped = []

    def stop() -> None:
        stopped.append(True)
        if task is not None:
            task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop)
    try:
        return await op(args)
    except asyncio.CancelledError:
        if stopped:
            return EXIT_OK if args.command == "listen" else EXIT_FAILURE
        raise


__all__ = ["Operation", "main_for"]
