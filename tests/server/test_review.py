"""Defects found by an independent correctness review, each proved through the raw driver (in
memory)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

REVIEW = FIXTURES / "review_server.py"
Spawn = Callable[..., ServerProcess]


def test_non_finite_progress_is_never_written(spawn: Spawn) -> None:
    # NaN/Infinity are not JSON: they would go out as null and break ProgressNotification.
    p = spawn(REVIEW)
    msg = p.request_msg("tools/call", {"name": "odd_progress", "arguments": {}}, progressToken="t")
    p.send(msg)
    final, notes = p.read_until(msg["id"])
    assert final["result"]["content"][0]["text"] == "done"
    assert [n["params"] for n in notes] == [{"progressToken": "t", "progress": 2, "total": 10}]
    assert b"null" not in b"".join(p.raw_out)


def test_a_huge_uri_cannot_stall_template_matching(spawn: Spawn) -> None:
    # Backtracking over every split of 1 MB between {name} and {ext} would take hours on
    # the event loop; the read is refused as not found at once and serving goes on.
    p = spawn(REVIEW)
    assert (
        p.request("resources/read", {"uri": "notes://a.b.txt"})["result"]["contents"][0]["text"]
        == "a.b (txt)"
    )
    uri = "notes://" + "." * 1_000_000 + "/"
    err = p.request("resources/read", {"uri": uri}, timeout=20)["error"]
    assert err["code"] == -32602 and err["data"] == {"uri": uri}
    assert "result" in p.request("server/discover", timeout=5)
