"""A message board that many clients share, served on a Unix socket or TCP.

Start a listener, then call it from other terminals::

    mcpline run examples/socket_server.py --listen unix:/tmp/board.sock
    mcpline call post --args '{"text": "hello"}' --server unix:/tmp/board.sock
    mcpline read board://posts --server unix:/tmp/board.sock

The socket file is created 0600: only your user can connect. On TCP every client must also
send the listener's token; the listener writes it to a 0600 file (its path is on stderr) where
your own clients find it, and anyone else must be given it (``--token-file``,
``$MCPLINE_TOKEN``; see docs/sockets.md)::

    mcpline run examples/socket_server.py --listen tcp:127.0.0.1:8765
    mcpline call post --args '{"text": "hello"}' --server tcp:127.0.0.1:8765

(``python examples/socket_server.py [ADDRESS]`` does the same, by default on
``tcp:127.0.0.1:8765``.) Over stdio each client starts a server process of its own; behind a
listener one process serves every connection, so all clients see the same board, and a post
notifies the listens, on every connection, that subscribed to ``board://posts``.
"""

from __future__ import annotations

import sys

from mcpline import Context, Server

server = Server("board", version="1.0.0")

BOARD = "board://posts"
POSTS: list[dict[str, str]] = []


@server.tool()
async def post(text: str, ctx: Context) -> int:
    """Pin a message on the board; returns how many it holds."""
    # An async def runs on the event loop, so no lock is needed around POSTS.
    author = (ctx.client_info or {}).get("name", "anonymous")
    POSTS.append({"author": author, "text": text})
    server.resource_updated(BOARD)
    return len(POSTS)


@server.resource(BOARD, mime_type="application/json")
async def board() -> dict[str, list[dict[str, str]]]:
    """Every message, oldest first, with the name of the client that posted it."""
    return {"posts": list(POSTS)}


if __name__ == "__main__":
    server.run(sys.argv[1] if len(sys.argv) > 1 else "tcp:127.0.0.1:8765")
