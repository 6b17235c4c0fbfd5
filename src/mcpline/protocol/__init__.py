"""MCP protocol rules that sit on top of JSON-RPC, shared by the server and the client:
`_meta` and versions (`meta`), capabilities (`capabilities`), the HTTP headers a request
mirrors (`headers`), sealed ``requestState`` (`state`), URI templates (`uritemplate`), and the
bound on input rounds."""

MAX_INPUT_ROUNDS = 8
"""Rounds of input one request may go through by default: the input-required results
mcpline's client answers before it gives up (`mcpline.client.Client` ``max_rounds``), and the
times the legacy era (a server's, or ``mcpline bridge``'s in front of a 2026-07-28 server)
asks a legacy client for input for one request (`mcpline.server.legacy.LegacyEra`)."""

__all__ = ["MAX_INPUT_ROUNDS"]
