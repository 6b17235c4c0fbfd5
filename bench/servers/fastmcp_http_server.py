"""The FastMCP 4.1.6 bench server (`fastmcp_server.py`) over its Streamable HTTP transport.

    python fastmcp_http_server.py PORT

As its README shows (``app.run(transport="http")``, defaults otherwise), without the banner
and with uvicorn at WARNING so that no access line is logged per request (mcpline logs none).
"""

import sys

from fastmcp_server import app

if __name__ == "__main__":
    app.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        show_banner=False,
        log_level="warning",
    )
