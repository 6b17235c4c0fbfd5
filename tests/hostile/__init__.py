"""Hostile-input tests: each attack from docs/security.md against a real server process on
loopback, for a bounded time, asserting the documented bound and that a legitimate client is
still served."""
