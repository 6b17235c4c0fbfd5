"""FastMCP's "Testing Demo" server, ported to mcpline: tools, a resource, a template, prompts.

The original is ``examples/testing_demo/server.py`` in FastMCP's repository
(github.com/PrefectHQ/fastmcp); docs/porting-notes.md compares the two line by line. Serve
it over stdio with ``python examples/ported_testing_demo.py`` (or ``mcpline run
examples/ported_testing_demo.py``) and try::

    mcpline tools -- python examples/ported_testing_demo.py
    mcpline call greet name=Ada greeting=Hi -- python examples/ported_testing_demo.py
    mcpline read demo://greeting/Charlie -- python examples/ported_testing_demo.py
    mcpline get explain topic=MCP detail_level=simple -- python examples/ported_testing_demo.py

* ``add``, ``greet`` and ``async_multiply`` are tools: their parameters become the
  ``inputSchema``, and ``-> int`` / ``-> float`` an ``outputSchema`` with a
  ``structuredContent`` of ``{"result": ...}``. Arguments that break the schema
  (``{"a": "two"}``) are an ``isError`` result naming the field.
* ``demo://info`` is a static resource (``resources/list``) and ``demo://greeting/{name}`` a
  template (``resources/templates/list``): ``{name}`` is one path segment, pct-decoded.
  ``mime_type=`` puts ``text/plain`` in the listings too (a read of a ``str`` says it anyway).
* ``hello`` and ``explain`` are prompts, named by the decorator's first argument as in
  FastMCP. ``detail_level`` is a ``Literal`` here (a plain ``str`` in FastMCP): the schema
  lists the three levels, ``completion/complete`` offers them, and any other value is -32602
  instead of silently meaning "medium".
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcpline import Server

server = Server("testing-demo", version="1.0.0")


# Tools


@server.tool(annotations={"read_only": True, "idempotent": True})
def add(a: int, b: int) -> int:
    """Add two numbers together."""
    return a + b


@server.tool(annotations={"read_only": True, "idempotent": True})
def greet(name: str, greeting: str = "Hello") -> str:
    """Greet someone with a customizable greeting."""
    return f"{greeting}, {name}!"


@server.tool(annotations={"read_only": True, "idempotent": True})
async def async_multiply(x: float, y: float) -> float:
    """Multiply two numbers (an async tool: it runs on the event loop)."""
    return x * y


# Resources


@server.resource("demo://info", mime_type="text/plain")
def server_info() -> str:
    """Information about this server."""
    return "This is the mcpline port of FastMCP's Testing Demo server"


@server.resource("demo://greeting/{name}", mime_type="text/plain")
def greeting_resource(name: str) -> str:
    """A personalized greeting."""
    return f"Welcome to mcpline, {name}!"


# Prompts


@server.prompt("hello")
def hello_prompt(name: Annotated[str, "Who to greet"] = "World") -> str:
    """Ask for a friendly hello."""
    return f"Say hello to {name} in a friendly way."


@server.prompt("explain")
def explain_prompt(
    topic: Annotated[str, "What to explain"],
    detail_level: Annotated[
        Literal["simple", "medium", "detailed"], "How technical the explanation should be"
    ] = "medium",
) -> str:
    """Ask for an explanation of a topic."""
    if detail_level == "simple":
        return f"Explain {topic} in simple terms for beginners."
    if detail_level == "detailed":
        return f"Provide a detailed, technical explanation of {topic}."
    return f"Explain {topic} with moderate technical detail."


if __name__ == "__main__":
    server.run()
