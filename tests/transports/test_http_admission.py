"""The rungs of the HTTP admission ladder, as pure functions, and the body budget."""

from __future__ import annotations

import pytest

from mcpline.spec import INTERNAL_ERROR, INVALID_REQUEST
from mcpline.transports.http import admission
from mcpline.transports.http.admission import BodyBudget, Refusal


def test_header_size_refuses_over_the_limit_only() -> None:
    assert admission.header_size(100, 100) is None
    refusal = admission.header_size(101, 100)
    assert refusal is not None
    assert (refusal.status, refusal.code) == (431, INVALID_REQUEST)
    assert "100 bytes" in refusal.message


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("application/json", None),
        ("application/json; charset=utf-8", None),
        ("text/plain", 415),
        (None, 415),
    ],
)
def test_content_type(value: str | None, status: int | None) -> None:
    refusal = admission.content_type(value)
    assert (None if refusal is None else refusal.status) == status


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("application/json, text/event-stream", None),
        ("*/*", None),
        ("application/json", 406),
        (None, 406),
    ],
)
def test_accept(value: str | None, status: int | None) -> None:
    refusal = admission.accept(value)
    assert (None if refusal is None else refusal.status) == status


@pytest.mark.parametrize(
    ("value", "length"),
    [("12", 12), (" 7 ", 7), ("0", 0), (None, None), ("-1", None), ("1e3", None), ("٣", None)],
)
def test_declared_length(value: str | None, length: int | None) -> None:
    assert admission.declared_length(value) == length


def test_body_size_413_closes_the_connection() -> None:
    assert admission.body_size(10, 10) is None
    refusal = admission.body_size(11, 10)
    assert refusal is not None and refusal.status == 413 and refusal.close
    assert (b"connection", b"close") in refusal.response_headers()


def test_over_budget_is_a_503_with_retry_after_that_closes() -> None:
    assert admission.over_budget(60, 40, 100) is None
    refusal = admission.over_budget(61, 40, 100)
    assert refusal is not None
    assert (refusal.status, refusal.code) == (503, INTERNAL_ERROR)
    headers = dict(refusal.response_headers())
    assert headers[b"retry-after"] == str(admission.RETRY_AFTER_SECONDS).encode()
    assert headers[b"connection"] == b"close"
    assert "max_body_budget" in refusal.message


def test_connection_limit_counts_the_new_connection() -> None:
    assert admission.connection_limit(8, 8) is None
    refusal = admission.connection_limit(9, 8)
    assert refusal is not None and refusal.status == 503 and refusal.close
    assert "max_connections" in refusal.message


def test_holds_grow_until_the_budget_and_release_everything() -> None:
    budget = BodyBudget(100)
    first, second = budget.hold(), budget.hold()
    assert first.grow(60) is None
    assert first.grow(30) is None  # never shrinks
    assert budget.held == 60
    refused = second.grow(41)
    assert isinstance(refused, Refusal) and refused.status == 503
    assert (second.size, budget.held) == (0, 60)  # a refusal holds nothing
    assert second.grow(40) is None
    assert budget.held == 100
    first.release()
    first.release()  # again is harmless
    assert budget.held == 40
    assert second.grow(100) is None  # grows by the difference only
    second.release()
    assert budget.held == 0


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_body_budget"):
        BodyBudget(0)
