"""Host-death watchdog: ``python -m mcpline.client._watchdog``.

Reads ``+PGID`` / ``-PGID`` lines on stdin from the host process. When stdin reaches EOF
(the host exited, however abruptly) every process group still registered is sent SIGTERM
and, after a grace period, SIGKILL, so that no server outlives its host for long.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    grace = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    groups: set[int] = set()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if len(line) < 2 or not line[1:].isdigit():
            continue
        pgid = int(line[1:])
        if line[:1] == b"+":
            groups.add(pgid)
        elif line[:1] == b"-":
            groups.discard(pgid)
    live = [g for g in groups if g > 1 and g != os.getpgrp()]
    for g in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        live = [g for g in live if _alive(g)]
        time.sleep(0.05)
    for g in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
