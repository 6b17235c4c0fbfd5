"""Resources: static URIs and RFC 6570 templates, listed, read and shaped into contents.

A resource is a function (or a constant) registered for a URI. A URI with ``{variables}``
is a template: its variables are matched out of the requested URI and passed to the
function converted to the annotated types (``def item(id: int)``). What the function
returns becomes ``contents``: ``str`` → text, ``bytes`` → base64 ``blob``, a contents dict
(``{"text": …}``/``{"blob": …}``) as is, a list of those for several entries, anything
else → its JSON text (``application/json``).

Path traversal: variables matched out of the path — ``{x}``, ``{.x}``, ``{/x}``, ``{/x*}``,
``{;x}`` — never contain ``/`` or ``\\`` (a URI that puts ``%2F`` or ``%5C`` in one matches
nothing, so the read fails with resource-not-found). ``{+x}``, ``{#x}`` and query variables
can; build file paths from them with `safe_path`, which refuses a path outside its root.
"""

from __future__ import annotations

import base64
import inspect
import logging
import os
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import JsonRpcError, ResourceNotFoundError
from ..protocol.uritemplate import Expression, UriTemplate
from ..spec import INVALID_PARAMS
from ._options import ResourceDefinition, check_keywords
from ._userfn import RunSync, UserFunction, definition, wants_context
from .context import Context
from .signature import schema as _schema

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

log = logging.getLogger("mcpline.server")

CONTENTS_KEYS = frozenset({"uri", "mimeType", "text", "blob", "_meta"})
CACHE_SCOPES = ("public", "private")


class PathEscapeError(ValueError):
    """`safe_path` refused a value: the path it names is not inside the root.

    Raised from a resource function, it answers ``resources/read`` as `ResourceNotFoundError`.
    """


def safe_path(root: str | os.PathLike[str], value: str | list[str]) -> Path:
    """``root / value`` resolved, after making sure it stays inside ``root``.

    ``value`` is a relative path (``{+path}``) or a list of segments (``{/path*}``). Raises
    `PathEscapeError` for a NUL byte, a ``..`` segment, an absolute path (``/etc``), a
    Windows drive or UNC path (``C:x``, ``\\\\host\\share``), or a path that leaves ``root``
    through a symbolic link. The file itself need not exist.
    """
    segments = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in segments):
        raise TypeError("safe_path takes a str or a list of str")
    text = "/".join(segments)
    if "\0" in text:
        raise PathEscapeError(f"{text!r} contains a NUL byte")
    windows = PureWindowsPath(text)
    if PurePosixPath(text).is_absolute() or windows.drive or windows.root:
        raise PathEscapeError(f"{text!r} is not a relative path")
    if ".." in text.replace("\\", "/").split("/"):
        raise PathEscapeError(f"{text!r} climbs out with '..'")
    base = Path(root).resolve()
    path = (base / text).resolve()
    if not path.is_relative_to(base):
        raise PathEscapeError(f"{text!r} leads outside {str(root)!r}")
    return path


@dataclass
class Resource:
    """A registered static resource or template; `definition` is what the list shows."""

    uri: str
    """The URI, or the template text for a template."""
    body: UserFunction
    definition: dict[str, Any]
    mime_type: str | None
    template: UriTemplate | None = None
    signature: _schema.Signature | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    list_params: frozenset[str] = field(default_factory=frozenset)
    """Template variables annotated as lists (a plain ``{var}`` arrives comma-joined)."""
    segment_params: frozenset[str] = field(default_factory=frozenset)
    """Template variables that stand for one path segment (see `segment_variables`)."""

    @property
    def is_template(self) -> bool:
        return self.template is not None

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The template variables ``uri`` binds, or ``None`` when it does not fit (a path
        separator decoded into a path-segment variable does not fit)."""
        if self.template is None:
            return None
        values = self.template.match(uri)
        if values is None or any(
            _carries_separator(values[name]) for name in self.segment_params if name in values
        ):
            return None
        return values


SEGMENT_OPERATORS = ("", ".", "/", ";")
SEPARATORS = ("/", "\\")


def segment_variables(template: UriTemplate) -> frozenset[str]:
    """Variables of ``template`` in path-segment position (``{x}``, ``{.x}``, ``{/x}``,
    ``{/x*}``, ``{;x}``): their values never carry a path separator."""
    return frozenset(
        spec.name
        for part in template.parts
        if isinstance(part, Expression) and part.operator in SEGMENT_OPERATORS
        for spec in part.variables
    )


def _refuse_wildcards(uri: str, template: UriTemplate, list_params: set[str]) -> None:
    """`ValueError` for FastMCP's ``{path*}`` wildcard on a non-list parameter: in RFC 6570 a
    simple variable never holds ``/`` (explode or not), so it would never match a path."""
    for part in template.parts:
        if not isinstance(part, Expression) or part.operator != "":
            continue
        for spec in part.variables:
            if spec.explode and spec.name not in list_params:
                name = spec.name
                fixed = uri.replace("{" + name + "*}", "{+" + name + "}")
                raise ValueError(
                    f"resource template {uri!r}: {{{name}*}} is FastMCP's wildcard, which "
                    f"RFC 6570 does not have: there a simple variable never holds '/', so it "
                    f"would match no path. Use {{+{name}}}, as in {fixed!r}: it matches "
                    f"values holding '/', {name}='a/b/c' (see docs/resources.md)"
                )


def _carries_separator(value: str | list[str]) -> bool:
    items = [value] if isinstance(value, str) else value
    return any(sep in item for item in items for sep in SEPARATORS)


def _constant(value: Any) -> Callable[[], Any]:
    def read() -> Any:
        return value

    return read


def make_resource(
    uri: str, fn: Callable[..., Any] | str | bytes, **spec: Unpack[ResourceDefinition]
) -> Resource:
    """Build a `Resource`; raises `ValueError` for a definition a client would reject.

    ``fn`` may be a constant (``str``/``bytes``) for fixed content. ``ttl_ms`` and
    ``cache_scope`` are this resource's caching hints on ``resources/read`` results; the
    options are `mcpline.server._options.ResourceDefinition`.
    """
    check_keywords(ResourceDefinition, spec, "make_resource()")
    name, title, description = spec.get("name"), spec.get("title"), spec.get("description")
    mime_type, annotations, icons = (
        spec.get("mime_type"),
        spec.get("annotations"),
        spec.get("icons"),
    )
    size, meta = spec.get("size"), spec.get("meta")
    ttl_ms, cache_scope = spec.get("ttl_ms"), spec.get("cache_scope")
    if not isinstance(uri, str) or not uri:
        raise ValueError("a resource URI must be a non-empty string")
    template = UriTemplate(uri) if "{" in uri else None
    if template is None and ":" not in uri:
        raise ValueError(f"resource URI {uri!r} needs a scheme (e.g. 'file:///…', 'myapp://…')")
    if ttl_ms is not None and (type(ttl_ms) is not int or ttl_ms < 0):
        raise ValueError("ttl_ms must be an integer >= 0")
    if cache_scope is not None and cache_scope not in CACHE_SCOPES:
        raise ValueError("cache_scope must be 'public' or 'private'")
    if size is not None and (type(size) is not int or size < 0):
        raise ValueError("size must be an integer >= 0")
    res_name = name or (getattr(fn, "__name__", None) if callable(fn) else uri) or uri
    if not callable(fn):
        if not isinstance(fn, (str, bytes)):
            raise TypeError("a resource is a function, a str or bytes")
        if template is not None:
            raise ValueError("a resource template needs a function to receive its variables")
        if size is None:
            size = len(fn.encode() if isinstance(fn, str) else fn)
        if mime_type is None:
            mime_type = "text/plain" if isinstance(fn, str) else "application/octet-stream"
        fn = _constant(fn)
        doc_summary, arg_docs = None, dict[str, str]()
    else:
        doc_summary, arg_docs = _schema.split_docstring(inspect.getdoc(fn))
    desc = description if description is not None else doc_summary

    signature: _schema.Signature | None = None
    context_param: str | None = None
    list_params: set[str] = set()
    if template is not None:
        signature = _schema.Signature(fn, name=res_name, skip=wants_context, arg_docs=arg_docs)
        context_param = signature.context_param
        params = set(signature.names)
        missing = [v for v in template.variables if v not in params and not signature.var_kw]
        if missing:
            raise ValueError(
                f"resource template {uri!r}: function {res_name!r} has no parameter for "
                f"{', '.join(missing)}"
            )
        required = set(signature.schema.get("required", []))
        extra = sorted(required - set(template.variables))
        if extra:
            raise ValueError(
                f"resource template {uri!r}: parameters {', '.join(extra)} are not template "
                "variables (give them defaults or add them to the template)"
            )
        props = signature.schema.get("properties", {})
        list_params = {n for n in template.variables if props.get(n, {}).get("type") == "array"}
        _refuse_wildcards(uri, template, list_params)
    else:
        hints = typing.get_type_hints(fn, include_extras=True)
        for pname, p in inspect.signature(fn).parameters.items():
            if wants_context(hints.get(pname)):
                context_param = pname
            elif p.default is inspect.Parameter.empty and p.kind not in (
                p.VAR_KEYWORD,
                p.VAR_POSITIONAL,
            ):
                raise ValueError(
                    f"static resource {uri!r}: parameter {pname!r} has no value to receive "
                    "(use a URI template with {" + pname + "})"
                )

    own: dict[str, Any] = {"mimeType": mime_type} if mime_type else {}
    if size is not None and template is None:
        own["size"] = size
    return Resource(
        uri=uri,
        body=UserFunction.of(fn, context_param),
        definition=definition(
            {("uriTemplate" if template else "uri"): uri, "name": res_name},
            title=title,
            description=desc,
            body=own,
            annotations=annotations,
            icons=icons,
            meta=meta,
        ),
        mime_type=mime_type,
        template=template,
        signature=signature,
        ttl_ms=ttl_ms,
        cache_scope=cache_scope,
        list_params=frozenset(list_params),
        segment_params=segment_variables(template) if template else frozenset(),
    )


# --- contents ---------------------------------------------------------------------------------


def _b64(data: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _entry(uri: str, mime_type: str | None, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {
            "uri": uri,
            "mimeType": mime_type or "application/octet-stream",
            "blob": _b64(value),
        }
    if (
        isinstance(value, dict)
        and ("text" in value or "blob" in value)
        and value.keys() <= CONTENTS_KEYS
    ):
        out = dict(value)
        if "text" in out and "blob" in out:
            raise ValueError("a contents entry has either 'text' or 'blob', not both")
        if "text" in out and not isinstance(out["text"], str):
            raise TypeError("a contents entry's 'text' must be a string")
        if "blob" in out:
            blob = out["blob"]
            if isinstance(blob, (bytes, bytearray, memoryview)):
                out["blob"] = _b64(blob)
            elif not isinstance(blob, str):
                raise TypeError("a contents entry's 'blob' must be bytes or base64 text")
        out.setdefault("uri", uri)
        if mime_type and "mimeType" not in out:
            out["mimeType"] = mime_type
        return out
    data = _schema.to_json(value)
    return {
        "uri": uri,
        "mimeType": mime_type or "application/json",
        "text": _schema.dumps_text(data),
    }


def to_contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    """A resource function's return value as the ``contents`` array of ``resources/read``.

    Never empty: a function with nothing to return should raise `ResourceNotFoundError`.
    """
    if isinstance(value, (list, tuple)):
        entries = [_entry(uri, mime_type, v) for v in value]
    else:
        entries = [_entry(uri, mime_type, value)]
    if not entries:
        raise ValueError(f"the resource function for {uri!r} returned no contents")
    return entries


# --- the registry -------------------------------------------------------------------------------


class Resources:
    """Static resources (by URI) and templates (in registration order) of one server."""

    def __init__(self) -> None:
        self.static: dict[str, Resource] = {}
        self.templates: dict[str, Resource] = {}

    def __bool__(self) -> bool:
        return bool(self.static or self.templates)

    def add(self, res: Resource) -> None:
        table = self.templates if res.is_template else self.static
        if res.uri in table:
            kind = "template" if res.is_template else "resource"
            raise ValueError(f"a {kind} for {res.uri!r} is already registered")
        table[res.uri] = res

    def remove(self, uri: str) -> Resource:
        """Unregister a resource or template by its URI/template text (`KeyError` if absent)."""
        if uri in self.static:
            return self.static.pop(uri)
        return self.templates.pop(uri)

    def resolve(self, uri: str) -> tuple[Resource, dict[str, Any]]:
        """The resource serving ``uri`` and the typed arguments for its function.

        An exact static URI wins; then templates in registration order. A URI that fits a
        template but whose variables do not convert is reported if nothing else matches. A
        path-segment variable (`segment_variables`) whose decoded value contains ``/`` or
        ``\\`` does not fit.
        """
        res = self.static.get(uri)
        if res is not None:
            return res, {}
        problem: str | None = None
        for res in self.templates.values():
            values = res.match(uri)
            if values is None:
                continue
            try:
                return res, bind_variables(res, values)
            except (msgspec.ValidationError, TypeError, ValueError) as exc:
                problem = f"{uri!r} does not fit template {res.uri!r}: {exc}"
        if problem:
            raise ResourceNotFoundError(uri, f"Resource not found: {problem}")
        raise ResourceNotFoundError(uri)

    def watchable(self, uri: str) -> bool:
        """Whether updates of ``uri`` (or of resources under it) can be reported."""
        if uri in self.static:
            return True
        if any(r.match(uri) is not None for r in self.templates.values()):
            return True
        prefix = uri.rstrip("/") + "/"
        return any(u.startswith(prefix) for u in self.static)


def bind_variables(res: Resource, values: dict[str, Any]) -> dict[str, Any]:
    """Typed keyword arguments from matched template variables (raises on a bad value)."""
    assert res.signature is not None
    prepared: dict[str, Any] = {}
    for key, value in values.items():
        if key in res.list_params and isinstance(value, str):
            value = value.split(",") if value else []
        prepared[key] = value
    return res.signature.bind(prepared)


def read_result(
    res: Resource, contents: list[dict[str, Any]], default_ttl_ms: int, default_scope: str
) -> dict[str, Any]:
    """The ``ReadResourceResult`` body (before ``resultType``/serverInfo are stamped)."""
    return {
        "contents": contents,
        "ttlMs": default_ttl_ms if res.ttl_ms is None else res.ttl_ms,
        "cacheScope": default_scope if res.cache_scope is None else res.cache_scope,
    }


async def read(
    res: Resource,
    uri: str,
    kwargs: dict[str, Any],
    ctx: Context,
    run_sync: RunSync,
) -> list[dict[str, Any]]:
    """Run the resource function and shape its contents.

    `FileNotFoundError` and `PathEscapeError` become not-found; every other exception
    propagates (so the framework can turn `InputRequired` into an MRTR result and failures
    into -32603).
    """
    ctx.resource_uri = uri
    try:
        value = await res.body.call(kwargs, ctx, run_sync)
    except (FileNotFoundError, PathEscapeError):
        raise ResourceNotFoundError(uri) from None
    if isinstance(value, BaseException):
        raise value
    return to_contents(uri, res.mime_type, value)


def check_uri_param(params: dict[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: resources/read needs a string 'uri'")
    return uri


__all__ = [
    "bind_variables",
    "CACHE_SCOPES",
    "check_uri_param",
    "CONTENTS_KEYS",
    "make_resource",
    "PathEscapeError",
    "read",
    "read_result",
    "Resource",
    "Resources",
    "safe_path",
    "SEGMENT_OPERATORS",
    "segment_variables",
    "SEPARATORS",
    "to_contents",
]
