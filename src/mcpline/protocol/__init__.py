"""MCP protocol rules that sit on top of JSON-RPC: versions, `_meta`, capabilities."""
