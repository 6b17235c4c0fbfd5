"""The server behind the bridge benchmark: an async echo and a tool that burns CPU."""

import time

from mcpline import Server

app = Server("bench-bridge")


@app.tool
async def aecho(text: str) -> str:
    """Return the text unchanged (an async tool: no worker thread)."""
    return text


@app.tool
def burn(ms: float) -> str:
    """Keep a CPU busy for ``ms`` milliseconds (the GIL: one process, one core at most)."""
    end = time.perf_counter() + ms / 1000
    n = 0
    while time.perf_counter() < end:
        n += 1
    return f"burned {n}"


if __name__ == "__main__":
    app.run()
