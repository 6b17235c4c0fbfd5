"""An mcpline server whose module prints to stdout at import time, before ``server.run()``.

Started as ``python print_at_import_server.py`` the banner corrupts the protocol stream;
started as ``mcpline run print_at_import_server.py`` it lands on stderr.
"""

from mcpline import Server

print("loading the echo server...")

server = Server("print-at-import", version="1.0.0")


@server.tool(annotations={"read_only": True})
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    server.run()
