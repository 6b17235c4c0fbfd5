"""Runs a server and records every line its client writes: ``tap.py LOG CMD...``.

The server inherits this process's stdout and stderr, so its output reaches the client
untouched; only the client-to-server direction passes through here (and into LOG).
"""

import contextlib
import subprocess
import sys

log_path, cmd = sys.argv[1], sys.argv[2:]
child = subprocess.Popen(cmd, stdin=subprocess.PIPE)
assert child.stdin is not None
with open(log_path, "ab") as log:
    for line in sys.stdin.buffer:
        log.write(line)
        log.flush()
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except BrokenPipeError:
            break
with contextlib.suppress(BrokenPipeError):
    child.stdin.close()
sys.exit(child.wait())
