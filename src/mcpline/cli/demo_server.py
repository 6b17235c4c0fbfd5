"""The demo's calculator, built in so that ``mcpline demo`` works from an installed package
(it mirrors ``examples/quickstart.py``): ``python -m mcpline.cli.demo_server``."""

from __future__ import annotations

from mcpline import Server, ToolError

server = Server("calculator", version="1.0.0")


@server.tool(annotations={"read_only": True, "idempotent": True})
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool(annotations={"read_only": True, "idempotent": True})
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ToolError("Cannot divide by zero: b must be non-zero")
    return a / b


if __name__ == "__main__":
    server.run()
