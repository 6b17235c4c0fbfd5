"""The options of `Server` and its decorators are declared once (`TypedDict`\\ s unpacked by
the signatures): a name none of them declares is a `TypeError` naming it, at once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Server
from mcpline.server._options import (
    OPTION_FIELDS,
    PromptDefinition,
    PromptOptions,
    ResourceDefinition,
    ResourceOptions,
    ServerKeywords,
    ServerOptions,
    ToolDefinition,
    ToolOptions,
)
from mcpline.server.prompts import make_prompt
from mcpline.server.resources import make_resource
from mcpline.server.tools import make_tool

SERVER_OWN = {
    "title",
    "description",
    "website_url",
    "icons",
    "lifespan",
    "state_key",
    "state_ttl",
    "state_single_use",
    "legacy",
    "bus",
    "middleware",
}
"""`Server` keywords that the server keeps itself rather than in `ServerOptions`."""


def keys(typed: Any) -> set[str]:
    return set(typed.__optional_keys__)


def test_every_server_keyword_is_an_option_field_or_the_servers_own() -> None:
    assert set(ServerOptions.__struct_fields__) == OPTION_FIELDS
    assert keys(ServerKeywords) == (OPTION_FIELDS - {"versions"}) | SERVER_OWN


def test_the_server_options_signature_reads_at_run_time() -> None:
    """What ``help(ServerOptions)`` and editors show: every field, by name."""
    params = inspect.signature(ServerOptions).parameters
    assert list(params) == list(ServerOptions.__struct_fields__)


def test_the_decorator_options_extend_the_definitions() -> None:
    assert keys(ToolOptions) - keys(ToolDefinition) == {
        "hidden",
        "strict",
        "task",
        "scopes",
        "inline",
    }
    assert keys(ResourceOptions) - keys(ResourceDefinition) == {"scopes"}
    assert keys(PromptOptions) - keys(PromptDefinition) == {"scopes"}


def test_options_reach_what_they_configure() -> None:
    server = Server("o", "2", title="Opts", page_size=7, legacy=False, state_ttl=30.0)
    assert server.options.page_size == 7 and server.info["title"] == "Opts"

    @server.tool(name="renamed", description="Said.", hidden=True, task="optional", scopes=["s"])
    def f(x: int) -> int:
        return x

    @server.resource("r://one", mime_type="text/plain", ttl_ms=5, scopes=["s"])
    def one() -> str:
        """One."""
        return "1"

    @server.prompt("p", description="P.", scopes=["s"])
    def p(topic: str) -> str:
        return topic

    tool = server.tools["renamed"]
    assert tool.definition["description"] == "Said."
    assert server.registry.required_scopes("tools/call", {"name": "renamed"}) == {"s"}
    assert server.resources["r://one"].definition["mimeType"] == "text/plain"
    assert server.prompts["p"].definition["description"] == "P."


def _register(call: Callable[[Server], Any]) -> Any:
    return call(Server("o"))


@pytest.mark.parametrize(
    ("call", "where", "name"),
    [
        (lambda s: Server("o", page_sise=3), "Server()", "page_sise"),  # type: ignore[call-arg]
        (lambda s: s.tool(titel="x"), "tool()", "titel"),
        (lambda s: s.add_tool(print, hiden=True), "add_tool()", "hiden"),
        (lambda s: s.resource("r://x", mime="text/plain"), "resource()", "mime"),
        (lambda s: s.resource("r://{x}", nme="x"), "resource()", "nme"),
        (lambda s: s.add_resource("r://x", "text", sizes=3), "add_resource()", "sizes"),
        (lambda s: s.prompt(argument_title={}), "prompt()", "argument_title"),
        (lambda s: s.add_prompt(print, tittle="x"), "add_prompt()", "tittle"),
        (lambda s: make_tool(print, hidden=True), "make_tool()", "hidden"),  # type: ignore[call-arg]
        (lambda s: make_resource("r://x", "t", scopes=["a"]), "make_resource()", "scopes"),  # type: ignore[call-arg]
        (lambda s: make_prompt(print, scopes=["a"]), "make_prompt()", "scopes"),  # type: ignore[call-arg]
    ],
)
def test_an_undeclared_option_is_a_type_error_naming_it(
    call: Callable[[Server], Any], where: str, name: str
) -> None:
    with pytest.raises(
        TypeError, match=rf"{where.replace('(', '[(]').replace(')', '[)]')}.*{name}"
    ):
        _register(call)
