"""One expensive computation per test session, shared by pytest-xdist's workers.

``once(tmp_path_factory, name, compute)`` runs ``compute()`` in the first worker that asks
and pickles its result to a file of this run's own temporary folder; every other worker
waits on the same ``fcntl.flock`` and loads that file. Without xdist (or on Windows, which
has no ``flock``) it just computes: a session fixture already runs once per process.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

from mcpline import _platform

from .provisioning import locked

T = TypeVar("T")


def once(factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """``compute()``'s result, computed once for every worker of this xdist run."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None or _platform.WINDOWS:
        return compute()
    shared = factory.getbasetemp().parent  # one folder for every worker of this run
    result = shared / f"{name}-{run}.pickle"
    with locked(shared / f"{name}-{run}.lock"):
        if result.is_file():
            loaded: T = pickle.loads(result.read_bytes())
            return loaded
        value = compute()
        tmp = result.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(value))
        os.replace(tmp, result)
        return value
