"""Serve the files under a directory, read-only, over stdio: `python examples/files.py DIR`.

``file:///{+path}`` reads any file below DIR (``path`` may contain ``/``) and
``files://by-name/{name}`` one file directly in it. Both go through `safe_path`, so
``../``, absolute paths and symbolic links out of DIR answer "resource not found".
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpline import Server, safe_path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()

server = Server("files", version="1.0.0")


@server.resource("file:///{+path}", mime_type="text/plain")
def read_file(path: str) -> str:
    """A text file below the served directory."""
    return safe_path(ROOT, path).read_text(encoding="utf-8")


@server.resource("files://by-name/{name}", mime_type="text/plain")
def read_by_name(name: str) -> str:
    """A text file directly in the served directory."""
    return safe_path(ROOT, name).read_text(encoding="utf-8")


if __name__ == "__main__":
    server.run()
