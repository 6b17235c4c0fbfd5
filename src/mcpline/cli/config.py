"""``mcpServers`` config files (the format MCP hosts use) and ``--header`` values.

A ``command`` entry launches a stdio server; a ``url`` entry (with ``headers`` and an
``auth`` object: `mcpline.client.oauth.oauth_settings`) reaches an ``http(s)`` one.
``${VAR}`` and ``${VAR:-default}`` are expanded in every value.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .options import UsageError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` in a config value, from the environment; an unset
    variable without a default is an error naming it and ``where`` it is used."""

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        got = os.environ.get(name)
        if got is not None and (got or default is None):
            return got
        if default is not None:
            return default
        raise UsageError(f"{where} uses ${{{name}}}, which is not set (write ${{{name}:-default}})")

    return _VAR.sub(sub, value)


@dataclass(frozen=True)
class ConfigEntry:
    """One ``mcpServers`` entry: a command to launch (stdio) or an ``http(s)`` URL."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: dict[str, Any] = field(default_factory=dict, repr=False)


def _strings(value: Any, what: str, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError(f"server {name!r}: {what} must be an object of strings")
    return {k: expand(v, f"server {name!r} {what}.{k}") for k, v in value.items()}


def load_config(path: str, name: str | None) -> ConfigEntry:
    """Server ``name`` of an ``mcpServers`` config file, ``${VAR}`` expanded everywhere."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read config {path}: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise UsageError(f"{path} has no mcpServers object")
    if name is None:
        if len(servers) != 1:
            raise UsageError(
                f"{path} defines {len(servers)} servers; "
                f"choose one with --name ({', '.join(servers)})"
            )
        name = next(iter(servers))
    entry = servers.get(name)
    if not isinstance(entry, dict):
        raise UsageError(
            f"no server named {name!r} in {path} (have: {', '.join(servers) or 'none'})"
        )
    kind = entry.get("type")
    if kind in ("http", "streamable-http", "streamableHttp") or (
        kind is None and "url" in entry and "command" not in entry
    ):
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise UsageError(f"server {name!r}: an http server needs a url")
        url = expand(url, f"server {name!r} url")
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"server {name!r}: url must be http(s)://HOST:PORT/mcp")
        return ConfigEntry(
            name,
            url=url,
            headers=_strings(entry.get("headers"), "headers", name),
            auth=_auth(entry.get("auth"), name),
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise UsageError(
            f"server {name!r} is neither a stdio server (command) nor an http one (url); "
            f"its type is {kind or '?'}"
        )
    args = entry.get("args") or []
    cwd = entry.get("cwd")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"server {name!r}: args must be a list of strings")
    if cwd is not None and not isinstance(cwd, str):
        raise UsageError(f"server {name!r}: cwd must be a string")
    env = _strings(entry.get("env"), "env", name) if entry.get("env") is not None else None
    if cwd is not None:
        cwd = expand(cwd, f"server {name!r} cwd")
        cwd = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(cwd))
    return ConfigEntry(
        name,
        command=expand(command, f"server {name!r} command"),
        args=[expand(a, f"server {name!r} args[{i}]") for i, a in enumerate(args)],
        env=env,
        cwd=cwd,
    )


def _auth(value: Any, name: str) -> dict[str, Any]:
    """An entry's ``auth`` object, ``${VAR}`` expanded in its strings (and string lists)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"server {name!r}: auth must be an object")
    out: dict[str, Any] = {}
    for key, v in value.items():
        where = f"server {name!r} auth.{key}"
        if isinstance(v, str):
            out[key] = expand(v, where)
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[key] = [expand(x, where) for x in v]
        elif isinstance(v, bool) or v is None:
            out[key] = v
        else:
            raise UsageError(f"{where} must be a string, a list of strings or true/false")
    return out


def parse_auth(values: Sequence[str]) -> dict[str, str]:
    """``--auth KEY=VALUE`` options as a dict (``${VAR}`` expanded, so a secret can stay out
    of the process list)."""
    settings: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--auth wants KEY=VALUE, got {item.split('=')[0]!r:.40}")
        settings[key.strip()] = expand(value.strip(), f"--auth {key.strip()}")
    return settings


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as a dict."""
    headers: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or any(c in item for c in "\r\n"):
            raise UsageError(f"--header wants 'Name: value', got {item!r:.80}")
        headers[name.strip()] = value.strip()
    return headers


__all__ = ["ConfigEntry", "expand", "load_config", "parse_auth", "parse_headers"]
