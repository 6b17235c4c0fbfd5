"""The mcp 2.3.0 bench server (`mcp_server.py`) over the SDK's Streamable HTTP transport.

    python mcp_http_server.py PORT

As its README shows (``app.run(transport="streamable-http")``, defaults otherwise), with
uvicorn at WARNING so that no access line is logged per request (mcpline logs none either).
"""

import sys

from mcp_server import app

if __name__ == "__main__":
    app.settings.log_level = "WARNING"
    app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
