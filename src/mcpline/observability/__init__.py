"""Observability: request metrics in the Prometheus text format (`metrics`); see
docs/observability.md. The HTTP app serves them at ``/metrics`` when asked
(``metrics=True``, ``mcpline run --http ... --metrics``)."""

from __future__ import annotations
