"""The official SDK's bench server (`mcp_server.py`) over Streamable HTTP: binds 127.0.0.1 on
a free port, prints ``listening on http://127.0.0.1:PORT/mcp``, serves until killed."""

import socket

import uvicorn
from mcp_server import app

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    config = uvicorn.Config(
        app.streamable_http_app(host="127.0.0.1"),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])
