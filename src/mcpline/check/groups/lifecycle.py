"""lifecycle: exit at stdin EOF (idle and with a call in flight) and on SIGTERM, each in a
process of its own."""

from __future__ import annotations

import signal
import time

from ... import _platform
from ...spec import TOOLS_CALL
from ..model import PASS, SKIP, WARN, CheckContext


def run(ctx: CheckContext) -> None:
    exit_timeout = ctx.options.exit_timeout
    p = ctx.spawn("eof")
    ctx.wait_ready(p)
    t0 = time.monotonic()
    p.close_stdin()
    code = p.wait_exit(exit_timeout)
    took = time.monotonic() - t0
    if code is None:
        status, seen = WARN, f"still running {exit_timeout:g} s after stdin closed (then killed)"
    elif code != 0:
        status, seen = (
            WARN,
            f"exited after {took:.2f} s with status {code} (0 expected for a clean shutdown)",
        )
    else:
        status, seen = PASS, f"exited with status 0 after {took:.2f} s"
    ctx.add(
        "lifecycle.stdin-eof",
        status,
        "S·SHOULD exit promptly when stdin reaches EOF; mcpline rec: exit 0 (spec: "
        "basic/transports/stdio#shutdown)",
        seen,
    )
    p.stop(grace=0.2)
    slow = ctx.slow
    if slow is not None:
        p = ctx.spawn("eof-busy")
        ctx.wait_ready(p)
        p.send(
            p.request_msg(
                TOOLS_CALL, {"name": slow.name, "arguments": slow.arguments(30.0)}, id="busy"
            )
        )
        time.sleep(0.3)
        t0 = time.monotonic()
        p.close_stdin()
        code = p.wait_exit(exit_timeout + 3.0)
        took = time.monotonic() - t0
        ctx.add(
            "lifecycle.stdin-eof-busy",
            PASS if code is not None else WARN,
            (
                "S·SHOULD exit promptly at EOF; mcpline rec: cancel in-flight work rather than "
                "wait for it (spec: basic/transports/stdio#shutdown)"
            ),
            f"with a 30 s {slow.name} call in flight, exited after {took:.2f} s (status {code})"
            if code is not None
            else (
                f"with a 30 s {slow.name} call in flight, still running "
                f"{exit_timeout + 3:g} s after EOF"
            ),
        )
        p.stop(grace=0.2)
    sigterm_rule = (
        "mcpline rec: treat SIGTERM like EOF; clients escalate SIGTERM then SIGKILL (refines "
        "spec: basic/transports/stdio#shutdown)"
    )
    if "SIGTERM" not in _platform.SHUTDOWN_SIGNALS:
        ctx.add(
            "lifecycle.sigterm",
            SKIP,
            sigterm_rule,
            f"no catchable SIGTERM on {_platform.NAME} (a client's TerminateProcess cannot be "
            "caught): shutdown there is stdin EOF",
        )
        return
    p = ctx.spawn("sigterm")
    ctx.wait_ready(p)
    t0 = time.monotonic()
    p.signal(signal.SIGTERM)
    code = p.wait_exit(exit_timeout)
    took = time.monotonic() - t0
    if code is None:
        status, seen = WARN, f"still running {exit_timeout:g} s after SIGTERM"
    else:
        how = (
            "status 0"
            if code == 0
            else (f"killed by signal {-code}" if code < 0 else f"status {code}")
        )
        status, seen = PASS, f"exited after {took:.2f} s ({how})"
    ctx.add(
        "lifecycle.sigterm",
        status,
        sigterm_rule,
        seen,
    )
    p.stop()
