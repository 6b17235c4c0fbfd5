"""Finding the `Server` a Python file defines (``FILE[:OBJECT]``), for the command line and
for the HTTP workers that import the file again in each process (`load_worker_app`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..transports.http import HttpApp
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


def load_worker_app() -> HttpApp:
    """The app of one worker process of ``mcpline run FILE --http --workers N`` (uvicorn's
    app factory, given to `mcpline.transports.http.serve.serve_workers`): the file named by
    ``$MCPLINE_HTTP_TARGET`` imported again, verifying tokens as ``$MCPLINE_AUTH`` says."""
    from ..transports.http.serve import TARGET_ENV, worker_app
    from ..transports.stdio import configure_logging
    from .auth.config import AUTH_ENV, app_options

    configure_logging()
    spec = os.environ.get(AUTH_ENV)
    extra = app_options(spec, env=os.environ) if spec else {}
    return worker_app(load_server(os.environ[TARGET_ENV]), **extra)


__all__ = ["DEFAULT_NAMES", "load_server", "load_worker_app"]
