"""A small calculator served over stdio: `python examples/quickstart.py`.

stdout is the protocol channel: do not print() to it at import time or before server.run()
(print to stderr, or start the file with `mcpline run examples/quickstart.py`, which takes
stdout before importing it). Once the server runs, print() goes to stderr.
"""

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
