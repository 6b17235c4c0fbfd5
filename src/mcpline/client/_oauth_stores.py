"""Where `mcpline.client.oauth.OAuth` keeps tokens and registered clients between runs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Protocol


class TokenStore(Protocol):
    """Keeps what authorization produced (tokens, registered clients) under a key."""

    async def load(self, key: str) -> dict[str, Any] | None: ...

    async def save(self, key: str, value: dict[str, Any]) -> None: ...


class MemoryTokenStore:
    """Tokens for the life of this process (the default)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        value = self._data.get(key)
        return dict(value) if value is not None else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        self._data[key] = dict(value)

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._data)} entries)"


def config_dir() -> Path:
    """The user's config directory for mcpline (``$XDG_CONFIG_HOME/mcpline``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcpline"


class FileTokenStore:
    """One JSON file per key in ``directory`` (default ``<config dir>/oauth``): the directory
    ``0700``, each file ``0600``, written atomically."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else config_dir() / "oauth"

    def _path(self, key: str) -> Path:
        return self.directory / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    async def load(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.directory, 0o700)
        path = self._path(key)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"


__all__ = ["FileTokenStore", "MemoryTokenStore", "TokenStore", "config_dir"]
