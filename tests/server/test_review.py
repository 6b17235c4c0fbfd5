"""Defects found by an independent correctness review, each proved over a real pipe."""

from __future__ import annotations

from collections.abc import Callable

from ..proc import FIXTURES, ServerProcess

REVIEW = FIXTURES / "review_server.py"
Spawn = Callable[..., ServerProcess]


def test_non_finite_progress_is_never_written(spawn: Spawn) -> None:
    # NaN/Infinity are not JSON: they would go out as null and break ProgressNotification.
    p = spawn(REVIEW)
    msg = p.request_msg("tools/call", {"name": "odd_progress", "arguments": {}},
                        progressToken="t")
    p.send(msg)
    final, notes = p.read_until(msg["id"])
    assert final["result"]["content"][0]["text"] == "done"
    assert [n["params"] for n in notes] == [{"progressToken": "t", "progress": 2, "total": 10}]
    assert b"null" not in b"".join(p.raw_out)
