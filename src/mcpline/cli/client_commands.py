"""Client subcommands: ``call``, ``tools``, ``discover``, ``resources``, ``read``, ``prompts``,
``get`` and ``listen``.

The server is ``-- SERVER_CMD [ARGS...]``, ``--server unix:PATH|tcp:HOST:PORT|URL`` (an
``http(s)://`` endpoint, with ``--header 'K: V'`` options) or ``--config FILE --name NAME``
(the ``mcpServers`` format MCP hosts use: ``command`` entries, or ``url`` ones with
``headers``; ``${VAR}`` and ``${VAR:-default}`` are expanded in every value). Output is JSON, or
tables when stdout is a terminal (``--json`` forces JSON); on a terminal every piece of
server text goes through `for_terminal` (JSON through `json_for_terminal`). Exit codes: 0
success, 1 a tool result with ``isError: true``, 2 a protocol or transport failure (one line
on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._version import version
from ..spec import LIST_CHANGED, PROMPTS_LIST, RESOURCE_UPDATED, RESOURCES_LIST, TOOLS_LIST
from ..terminal import for_terminal, json_for_terminal

if TYPE_CHECKING:
    from ..client import Client, Transport

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_FAILURE = 2


SERVER_USAGE = "(-- SERVER_CMD [ARGS...] | --server ADDRESS | --config FILE --name NAME)"


class UsageError(Exception):
    """Bad command-line input (exit 2)."""


class _DashDashParser(argparse.ArgumentParser):
    """Everything after the first ``--`` is the server command, never our options."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        items = list(sys.argv[1:] if args is None else args)
        tail: list[str] = []
        if "--" in items:
            i = items.index("--")
            items, tail = items[:i], items[i + 1 :]
        ns, extras = super().parse_known_args(items, namespace)
        ns.server_cmd = tail
        return ns, extras


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("server selection (one of)")
    g.add_argument(
        "--server",
        metavar="ADDRESS",
        help="connect to unix:PATH, tcp:HOST:PORT or an http(s)://HOST/mcp endpoint",
    )
    g.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for every request to an http(s) server (repeatable)",
    )
    g.add_argument(
        "--token-file",
        metavar="PATH",
        help="the token of a tcp: server (default: $MCPLINE_TOKEN, else the file it wrote)",
    )
    g.add_argument("--config", metavar="FILE", help="an mcpServers JSON config file (with --name)")
    g.add_argument("--name", metavar="NAME", help="which server of --config to start")
    o = p.add_argument_group("output and behaviour")
    o.add_argument("--json", action="store_true", help="print JSON even on a terminal")
    o.add_argument(
        "--verbose", action="store_true", help="show the wire traffic and server stderr on stderr"
    )
    o.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="deadline for the command's requests, server start and era probe included "
        "(default 60)",
    )
    o.add_argument(
        "--era",
        choices=("auto", "modern", "legacy"),
        default="auto",
        help="skip era detection (default auto)",
    )


def _add(
    sub: Any, name: str, help_text: str, usage_args: str, func: Callable[..., Any]
) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        help=help_text,
        description=help_text,
        usage=f"mcpline {name} {usage_args}[options] {SERVER_USAGE}",
    )
    p.__class__ = _DashDashParser
    p.set_defaults(func=lambda args: main_for(args, func), server_cmd=[])
    return p  # type: ignore[no-any-return]


def register(sub: Any) -> None:
    p = _add(sub, "call", "call a tool and print its CallToolResult", "NAME [--args JSON] ", _call)
    p.add_argument("tool", metavar="NAME", help="the tool to call")
    p.add_argument(
        "--args", default="{}", metavar="JSON", help="the arguments, a JSON object (default {})"
    )
    _common(p)
    p = _add(sub, "tools", "list the server's tools (tools/list, all pages)", "", _tools)
    _common(p)
    p = _add(sub, "discover", "print the era, version, server info and capabilities", "", _discover)
    _common(p)
    p = _add(
        sub, "resources", "list the server's resources (resources/list, all pages)", "", _resources
    )
    _common(p)
    p = _add(sub, "read", "read a resource (resources/read)", "URI ", _read)
    p.add_argument("uri", metavar="URI")
    _common(p)
    p = _add(sub, "prompts", "list the server's prompts (prompts/list, all pages)", "", _prompts)
    _common(p)
    p = _add(sub, "get", "get a prompt (prompts/get)", "NAME [--args JSON] ", _get)
    p.add_argument("prompt", metavar="NAME")
    p.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the prompt arguments, a JSON object of strings",
    )
    _common(p)
    p = _add(
        sub,
        "listen",
        "print list-changed/updated notifications as JSON lines until interrupted",
        "",
        _listen,
    )
    p.add_argument(
        "--resource",
        action="append",
        default=[],
        metavar="URI",
        help="also subscribe to updates of URI (repeatable)",
    )
    _common(p)


# --- server selection ----------------------------------------------------------------------


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
            raise UsageError(f"server {name!r}: url must be http:// or https://")
        return ConfigEntry(name, url=url, headers=_strings(entry.get("headers"), "headers", name))
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


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as a dict."""
    headers: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or any(c in item for c in "\r\n"):
            raise UsageError(f"--header wants 'Name: value', got {item!r:.80}")
        headers[name.strip()] = value.strip()
    return headers


def _http_transport(url: str, headers: dict[str, str]) -> Transport:
    from ..client.http import HttpServer
    from ..client.oauth import FileTokenStore, OAuth

    # A server that answers 401 gets the browser flow; tokens are kept (0600) for next time.
    auth = OAuth(client_name="mcpline-cli", store=FileTokenStore())
    try:
        return HttpServer(url, headers, auth, close_grace=1.0)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_client(args: argparse.Namespace) -> Client:
    """The client for the server the command line names, with the one-shot options: the
    deadline is ``--timeout`` (server start and era probe included), shutdown graces 1 s."""
    from ..client import SocketServer, StdioServer

    chosen = sum(bool(x) for x in (args.server, args.config, args.server_cmd))
    if chosen != 1:
        raise UsageError(
            "give the server as -- SERVER_CMD [ARGS...], --server ADDRESS "
            "or --config FILE --name NAME"
        )
    if args.name and not args.config:
        raise UsageError("--name needs --config")
    is_http = (args.server or "").startswith(("http://", "https://"))
    if args.token_file and not (args.server or "").startswith("tcp:"):
        raise UsageError("--token-file needs --server tcp:HOST:PORT")
    if args.header and not (is_http or args.config):
        raise UsageError("--header needs an http(s) server")
    headers = parse_headers(args.header)
    transport: Transport
    if is_http:
        transport = _http_transport(args.server, headers)
    elif args.server:
        from ..addresses import parse_address, read_token_file

        try:
            parse_address(args.server)
            token = read_token_file(args.token_file) if args.token_file else None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        transport = SocketServer(args.server, token=token, close_grace=1.0)
    else:
        if args.config:
            entry = load_config(args.config, args.name)
            if entry.url is not None:
                transport = _http_transport(entry.url, {**entry.headers, **headers})
                return _client(args, transport)
            if headers:
                raise UsageError("--header needs an http(s) server")
            assert entry.command is not None
            command, cmd_args, env, cwd = entry.command, entry.args, entry.env, entry.cwd
        else:
            command, cmd_args, env, cwd = args.server_cmd[0], args.server_cmd[1:], None, None
        transport = StdioServer(
            command,
            cmd_args,
            env=env,
            cwd=cwd,
            on_stderr=_server_stderr if args.verbose else _ignore,
            close_grace=1.0,
            term_grace=1.0,
        )
    return _client(args, transport)


def _client(args: argparse.Namespace, transport: Transport) -> Client:
    from ..client import Client

    return Client(
        transport,
        timeout=args.timeout,
        max_timeout=max(600.0, args.timeout),
        deadline=None if args.command == "listen" else args.timeout,
        probe_timeout=min(5.0, args.timeout / 2),
        era=args.era,
        client_info={"name": "mcpline-cli", "version": version()},
        trace=_trace if args.verbose else None,
    )


def _server_stderr(line: str) -> None:
    _note(f"[server] {line}")


def _ignore(line: str) -> None:
    pass


def _trace(direction: str, line: bytes) -> None:
    arrow = "→" if direction == "send" else "←"
    text = line.decode("utf-8", "replace")
    if len(text) > 4000:
        text = text[:4000] + f"… [{len(line)} bytes]"
    _note(f"{arrow} {text}")


def _note(text: str) -> None:
    """One line of diagnostics on stderr (server text made safe for a terminal)."""
    print(for_terminal(text), file=sys.stderr, flush=True)


# --- running ---------------------------------------------------------------------------------


def main_for(args: argparse.Namespace, op: Callable[..., Awaitable[int]]) -> int:
    """Run one client operation; map failures to exit code 2 with one line on stderr."""
    from ..client import ClientError

    _configure_logging(args.verbose)
    try:
        return asyncio.run(_guarded(args, op))
    except UsageError as exc:
        _note(f"mcpline {args.command}: {exc}")
        return EXIT_FAILURE
    except ClientError as exc:
        _note(f"mcpline {args.command}: {_one_line(str(exc))}")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_OK if args.command == "listen" else EXIT_FAILURE
    except BrokenPipeError:
        # Whoever read our stdout went away (`| head`). Point fd 1 at /dev/null so the
        # final flush at exit cannot raise again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.command == "listen":
            return EXIT_OK  # like an interruption: the listener stops
        print(
            f"mcpline {args.command}: stdout was closed before the output was written",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except Exception as exc:
        # Typically a result whose shape the human-readable view cannot show.
        if args.verbose:
            import traceback

            traceback.print_exc()
        why = _one_line(f"{type(exc).__name__}: {exc}")
        _note(f"mcpline {args.command}: unexpected response from the server ({why})")
        return EXIT_FAILURE


def _configure_logging(verbose: bool) -> None:
    """Library warnings (restarts, skipped lines) only with --verbose: stderr stays one line."""
    import logging

    if verbose:
        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="mcpline: %(message)s")
        logging.getLogger("mcpline.client.server_stderr").setLevel(logging.WARNING)
        # Request lines would show URLs, whose query may hold a key.
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    else:
        logging.getLogger("mcpline").setLevel(logging.CRITICAL)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:2000]


async def _guarded(args: argparse.Namespace, op: Callable[..., Awaitable[int]]) -> int:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    stopped = []

    def stop() -> None:
        stopped.append(True)
        if task is not None:
            task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop)
    try:
        return await op(args)
    except asyncio.CancelledError:
        if stopped:
            return EXIT_OK if args.command == "listen" else EXIT_FAILURE
        raise


def _wants_json(args: argparse.Namespace) -> bool:
    return bool(args.json) or not sys.stdout.isatty()


def _emit_json(obj: Any, *, line: bool = False) -> None:
    """``obj`` as JSON on stdout: indented on a terminal (unless ``line``), and there with
    `json_for_terminal` escapes."""
    if sys.stdout.isatty():
        text = json_for_terminal(json.dumps(obj, ensure_ascii=False, indent=None if line else 2))
    else:
        text = json.dumps(obj, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _say(text: str) -> None:
    """A line of human output on stdout, made safe for a terminal."""
    print(for_terminal(text))


def _json_arg(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args must be a JSON object ({what})")
    return value


class _ProgressBar:
    """Progress notifications on stderr: a bar on a terminal, nothing otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.enabled:
            return
        width = 30
        if total:
            frac = max(0.0, min(1.0, progress / total))
            bar = "█" * int(frac * width) + "░" * (width - int(frac * width))
            text = f"{self.label} [{bar}] {progress:g}/{total:g}"
        else:
            text = f"{self.label} {progress:g}"
        if message:
            text += f" {for_terminal(_one_line(message))}"
        sys.stderr.write("\r\x1b[2K" + text[:200])
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


# --- operations ------------------------------------------------------------------------------


def _offers(description: Any, capability: str) -> bool:
    """Whether the server declared ``capability``; true when its capabilities are unknown
    (a modern server that refused ``server/discover``), where only asking can tell."""
    return "capabilities" not in description.raw or capability in description.capabilities


def _offers_none(capability: str) -> str:
    return f"this server offers no {capability} (it declared no {capability} capability)"


async def _require(client: Any, capability: str) -> None:
    """Refuse (exit 2) before sending a request the server never declared it serves."""
    if not _offers(await client.discover(), capability):
        raise UsageError(_offers_none(capability))


async def _call(args: argparse.Namespace) -> int:
    arguments = _json_arg(args.args, "the tool arguments")
    bar = _ProgressBar(args.tool)
    from .task_status import TaskStatus

    status = TaskStatus(args.tool)  # a task the server makes of the call
    async with make_client(args) as client:
        await _require(client, "tools")
        try:
            result = await client.call_tool(
                args.tool,
                arguments,
                on_progress=bar if bar.enabled else None,
                on_task=status if status.enabled else None,
            )
        finally:
            bar.done()
            status.done()
    if _wants_json(args):
        _emit_json(result)
    else:
        _human_call(result)
    return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_OK


async def _list(
    args: argparse.Namespace,
    method: str,
    key: str,
    headers: Sequence[str],
    row: Callable[[dict[str, Any]], list[str]],
) -> int:
    """Every page of ``method``: the merged result as JSON, or a table of its ``key`` items.

    A server that never declared the capability (``key``) is not asked: the answer is an
    empty list (JSON, with a notice on stderr) or the notice alone (terminal).
    """
    async with make_client(args) as client:
        if not _offers(await client.discover(), key):
            if _wants_json(args):
                _emit_json({key: []})
                _note(f"mcpline {args.command}: {_offers_none(key)}")
            else:
                _say(_offers_none(key))
            return EXIT_OK
        result = await client.list_all(method, key)
    if _wants_json(args):
        _emit_json(result)
    else:
        _table(headers, [row(item) for item in result[key]])
    return EXIT_OK


async def _tools(args: argparse.Namespace) -> int:
    return await _list(
        args, TOOLS_LIST, "tools", ["Tool", "Parameters", "Description", "Hints"], _tool_row
    )


def _tool_row(t: dict[str, Any]) -> list[str]:
    ann = t.get("annotations") or {}
    flags = [
        k.replace("Hint", "")
        for k in ("readOnlyHint", "destructiveHint", "idempotentHint")
        if ann.get(k)
    ]
    params = ", ".join((t.get("inputSchema") or {}).get("properties", {}) or {})
    return [
        t.get("name", "?"),
        f"({params})",
        (t.get("description") or "").strip(),
        " ".join(flags),
    ]


async def _discover(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        description = await client.discover()
    info = description.to_dict()
    if _wants_json(args):
        _emit_json(info)
    else:
        server = info["serverInfo"]
        rows = [
            ["era", info["era"]],
            ["protocol version", info["protocolVersion"]],
            ["server supports", ", ".join(info["supportedVersions"])],
            ["server", f"{server.get('name', '?')} {server.get('version', '')}".strip()],
            ["capabilities", ", ".join(sorted(info["capabilities"])) or "none"],
        ]
        if info.get("instructions"):
            rows.append(["instructions", info["instructions"]])
        _table(["", ""], rows)
    return EXIT_OK


async def _resources(args: argparse.Namespace) -> int:
    return await _list(
        args,
        RESOURCES_LIST,
        "resources",
        ["URI", "Name", "MIME type"],
        lambda r: [r.get("uri", "?"), r.get("name", ""), r.get("mimeType", "")],
    )


async def _read(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        await _require(client, "resources")
        result = await client.read_resource(args.uri)
    if _wants_json(args):
        _emit_json(result)
    else:
        for c in result.get("contents", []):
            if "text" in c:
                _say(c["text"])
            else:
                _say(
                    f"[{c.get('mimeType', 'binary')} blob, {len(c.get('blob', ''))} "
                    f"base64 chars] {c.get('uri', '')}"
                )
    return EXIT_OK


async def _prompts(args: argparse.Namespace) -> int:
    return await _list(
        args,
        PROMPTS_LIST,
        "prompts",
        ["Prompt", "Arguments", "Description"],
        lambda p: [
            p.get("name", "?"),
            ", ".join(a.get("name", "?") for a in p.get("arguments") or []),
            p.get("description", ""),
        ],
    )


async def _get(args: argparse.Namespace) -> int:
    arguments = _json_arg(args.args, "the prompt arguments")
    async with make_client(args) as client:
        await _require(client, "prompts")
        result = await client.get_prompt(args.prompt, arguments)
    if _wants_json(args):
        _emit_json(result)
    else:
        for m in result.get("messages", []):
            content = m.get("content") or {}
            text = content.get("text") if isinstance(content, dict) else None
            _say(f"{m.get('role', '?')}: {text if text is not None else json.dumps(content)}")
    return EXIT_OK


_LEGACY_NOTIFICATIONS = {
    **{flag: notification for flag, notification in LIST_CHANGED.values()},
    "resourceSubscriptions": RESOURCE_UPDATED,
}
"""A listen filter flag → the notification a legacy server sends unasked for it."""


def _legacy_listen_notice(params: dict[str, Any]) -> str:
    """What a legacy server (no ``subscriptions/listen``) can send unasked, per its
    capabilities: the client's stand-in acknowledgement, said on stderr, never printed as
    if the server had sent it."""
    honoured = params.get("notifications") or {}
    methods = [m for kind, m in _LEGACY_NOTIFICATIONS.items() if honoured.get(kind)]
    if not methods:
        return "legacy server: it declared none of the notifications asked for"
    return f"legacy server: listening for {', '.join(methods)}"


async def _listen(args: argparse.Namespace) -> int:
    async with make_client(args) as client:
        listener = client.listen(resource_uris=args.resource)
        async with listener:
            async for note in listener:
                if note.synthesized:
                    _note(f"mcpline listen: {_legacy_listen_notice(note.params)}")
                elif _wants_json(args):
                    _emit_json(note.to_message(), line=True)
                else:
                    _say(f"{note.method} {json.dumps(note.params, ensure_ascii=False)}")
                    sys.stdout.flush()
    return EXIT_OK


# --- human output ---------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: list[list[str]]) -> None:
    cells = [[for_terminal(str(c)) for c in r] for r in rows]
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        if any(headers):
            print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for r in cells:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)))
        return
    table = Table(show_header=any(headers))
    for h in headers:
        table.add_column(h)
    for r in cells:
        table.add_row(*[Text(c) for c in r])  # Text, not markup: "[/]" is shown as it is
    Console().print(table)


def _human_call(result: dict[str, Any]) -> None:
    if result.get("isError"):
        print("tool error:")
    for block in result.get("content", []):
        kind = block.get("type")
        if kind == "text":
            _say(block.get("text", ""))
        elif kind in ("image", "audio"):
            _say(f"[{kind} {block.get('mimeType', '')}, {len(block.get('data', ''))} base64 chars]")
        elif kind == "resource_link":
            _say(f"[resource link {block.get('uri', '')}]")
        else:
            _say(json.dumps(block, ensure_ascii=False))
    if "structuredContent" in result and not result.get("content"):
        _say(json.dumps(result["structuredContent"], ensure_ascii=False, indent=2))
