"""The check groups: what each runs at which stage of a run, and the two orders that matter.

A run (`mcpline.check.checker.Checker`) has four stages. The ``on_main`` steps probe one
shared main process in `REGISTRY` order: ids are numbered as requests go out and replies are
quoted, so that order is part of the output. The ``before_stop`` steps look at what arrived
just before the main process stops. The ``own`` steps start processes of their own. The
``after_all`` steps run once every process has stopped. Results are reported in
`ALL_GROUPS` order, each group's results in the order they were found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .groups import (
    cancellation,
    concurrency,
    discover,
    errors,
    framing,
    fuzz,
    legacy,
    lifecycle,
    notifications,
)
from .model import CheckContext, CheckResult
from .runner import ServerProcess

MainStep = Callable[[CheckContext, ServerProcess], None]
Step = Callable[[CheckContext], None]


@dataclass(frozen=True)
class Group:
    """One check group and its steps; a group leaves out the stages it has nothing for."""

    name: str
    on_main: MainStep | None = None
    before_stop: Step | None = None
    own: Step | None = None
    after_all: Step | None = None


REGISTRY: tuple[Group, ...] = (
    Group("framing", on_main=framing.probes, after_all=framing.purity),
    Group("discover", on_main=discover.run),
    Group("errors", on_main=errors.run),
    Group(
        "notifications",
        on_main=notifications.never_answered,
        before_stop=notifications.unsolicited,
    ),
    Group("concurrency", on_main=concurrency.run),
    Group("cancellation", on_main=cancellation.run),
    Group("legacy", own=legacy.run),
    Group("lifecycle", own=lifecycle.run),
    Group("fuzz", own=fuzz.run_fuzz),
    Group("soak", own=fuzz.run_soak),
)
"""Every group, in run order."""

GROUPS = (
    "framing",
    "errors",
    "discover",
    "notifications",
    "concurrency",
    "cancellation",
    "lifecycle",
    "legacy",
)
"""The groups a run has unless ``--only`` says otherwise, in report order."""
EXTRA_GROUPS = ("fuzz", "soak")
"""Groups that run only when asked for (``--fuzz N``, ``--soak N``)."""
ALL_GROUPS = GROUPS + EXTRA_GROUPS


def in_report_order(results: Iterable[CheckResult]) -> list[CheckResult]:
    """Results by group in `ALL_GROUPS` order (unknown groups last), stable within a group."""
    order = {g: i for i, g in enumerate(ALL_GROUPS)}
    return sorted(results, key=lambda r: order.get(r.group, len(order)))
