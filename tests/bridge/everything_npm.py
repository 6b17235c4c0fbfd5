"""The npm reference server ``@modelcontextprotocol/server-everything`` (legacy-only, stdio
and Streamable HTTP), pinned and installed into the git-ignored ``.cache/server-everything``
with the machine's npm, run with the Node 22 that `tests.conformance.provision` installs.

Concurrent test processes serialise on the same lock as the conformance provisioning, and the
marker makes reruns instant. ``python -m tests.bridge.everything_npm`` installs it by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..conformance import provision
from ..provisioning import ProvisionError, fingerprint, locked

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
PREFIX = provision.CACHE / "server-everything"


def _entry() -> Path:
    return (
        PREFIX
        / "node_modules"
        / "@modelcontextprotocol"
        / "server-everything"
        / "dist"
        / "index.js"
    )


def command(mode: str = "stdio") -> list[str]:
    """argv of the pinned server under Node 22 (``mode``: ``stdio`` or ``streamableHttp``),
    installed on first use."""
    node = provision.node22()
    entry = _entry()
    if not provision.is_current(PREFIX, PACKAGE, VERSION, entry):
        with locked(provision.LOCK_FILE):
            if not provision.is_current(PREFIX, PACKAGE, VERSION, entry):
                provision.npm_install(PREFIX, f"{PACKAGE}@{VERSION}", path_first=node.parent)
                if not entry.is_file():
                    raise ProvisionError(f"{PACKAGE}@{VERSION} installed, {entry} missing")
                provision.write_marker(PREFIX, PACKAGE, VERSION, artefact=fingerprint(entry))
    return [str(node), str(entry), mode]


if __name__ == "__main__":
    print(" ".join(command()))
    sys.exit(0)
