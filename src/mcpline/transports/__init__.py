"""Byte-stream adapters (stdio, Unix sockets, TCP) around the sans-I/O core."""
