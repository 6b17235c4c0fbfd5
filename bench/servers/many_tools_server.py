"""An mcpline server with ``BENCH_TOOLS`` tools (default 1000), for the scaling tables."""

import os

from mcpline import Server

app = Server("bench-many-tools")


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


for i in range(int(os.environ.get("BENCH_TOOLS", "1000"))):
    app.add_tool(echo, name=f"echo_{i}")


if __name__ == "__main__":
    app.run()
