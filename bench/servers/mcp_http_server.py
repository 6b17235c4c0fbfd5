"""The official SDK's bench server (`mcp_server.py`) over its Streamable HTTP transport.

    python mcp_http_server.py PORT   # as the SDK's README shows: app.run(transport=...)
    python mcp_http_server.py        # a free port, announced as ``listening on URL``

uvicorn logs at WARNING, so that no access line is written per request (mcpline writes none).
"""

import socket
import sys

import uvicorn
from mcp_server import app

if __name__ == "__main__":
    if len(sys.argv) > 1:
        app.settings.log_level = "WARNING"
        app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
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
