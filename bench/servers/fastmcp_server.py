"""The bench server written with FastMCP 4.1.6, as its README shows."""

import asyncio

from fastmcp import FastMCP

app = FastMCP("bench-fastmcp")


@app.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.tool
async def aecho(text: str) -> str:
    """Return the text unchanged (an async tool: no worker thread)."""
    return text


@app.tool
async def sleep(ms: int) -> str:
    """Sleep for ``ms`` milliseconds, then say so."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms} ms"


if __name__ == "__main__":
    app.run()
