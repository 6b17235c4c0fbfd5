"""Host-death watchdog (POSIX): ``python -m mcpline.client._watchdog``.

Reads ``+PGID`` / ``-PGID`` lines on stdin from the host process. When stdin reaches EOF
(the host exited, however abruptly) every process group still registered is sent SIGTERM
and, after a grace period, SIGKILL, so that no server outlives its host for long. Where the
platform lists descendants (Linux ``/proc``, else psutil), those of each group's leader that
left the group (``setsid``) are sent the same signals (`mcpline._platform.posix.end_groups`).

Windows needs no watchdog: each server's Job Object is closed, and so ended, with the host
(`mcpline._platform.HOST_WATCHDOG`).
"""

from __future__ import annotations

import signal
import sys


def main() -> int:
    from .._platform.posix import end_groups

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
    end_groups(groups, grace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
