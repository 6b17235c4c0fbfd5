"""The server framework: registration, dispatch and per-connection runtime."""
