"""Finding the `Server` a Python file defines (``FILE[:OBJECT]``), for the command line and
for the HTTP workers that import the file again in each process
(`mcpline.transports.http.serve.load_worker_app`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import Server

DEFAULT_NAMES = ("server", "mcp", "app")
"""The names looked up, in this order, when ``FILE`` names no object."""


def load_server(target: str) -> Server:
    """Import ``FILE[:OBJECT]`` (without running its ``__main__`` block) and return the Server."""
    from .server import Server

    path_text, _, obj_name = target.rpartition(":")
    if not path_text or not obj_name.isidentifier():
        path_text, obj_name = target, ""
    path = Path(path_text).resolve()
    if not path.is_file():
        raise SystemExit(f"mcpline run: no such file: {path_text}")
    sys.path.insert(0, str(path.parent))
    mod_name = path.stem if path.stem.isidentifier() else "_mcpline_target"
    if mod_name in sys.modules:
        mod_name = f"_mcpline_target_{mod_name}"  # never shadow an imported module
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"mcpline run: cannot import {path_text}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if obj_name:
        obj = getattr(module, obj_name, None)
        if not isinstance(obj, Server):
            raise SystemExit(f"mcpline run: {path_text} has no Server named {obj_name!r}")
        return obj
    for name in DEFAULT_NAMES:
        obj = getattr(module, name, None)
        if isinstance(obj, Server):
            return obj
    found = [v for v in vars(module).values() if isinstance(v, Server)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise SystemExit(f"mcpline run: {path_text} defines no mcpline Server")
    raise SystemExit(f"mcpline run: {path_text} defines several Servers; name one as FILE:OBJECT")


__all__ = ["DEFAULT_NAMES", "load_server"]
