"""`Checker`: one run of the selected check groups against a server command."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..spec import DISCOVER, MODERN_ERROR_CODES, SERVER_INFO_KEY
from .model import (
    CheckContext,
    CheckResult,
    Options,
    error_code,
    find_slow_tool,
    is_discover_result,
)
from .registry import GROUPS, REGISTRY, Group, in_report_order
from .runner import ServerProcess


class Checker:
    """Runs the selected groups against ``argv`` and collects `CheckResult`s."""

    def __init__(
        self,
        argv: list[str],
        *,
        groups: Iterable[str] = GROUPS,
        timeout: float = 5.0,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        fuzz: int = 0,
        seed: int = 0,
        soak: int = 0,
        exit_timeout: float = 5.0,
        startup_timeout: float = 20.0,
        on_result: Callable[[CheckResult], None] | None = None,
    ) -> None:
        options = Options(
            timeout=timeout,
            exit_timeout=exit_timeout,
            startup_timeout=max(startup_timeout, timeout),
            fuzz=fuzz,
            seed=seed,
            soak=soak,
            env=env,
            cwd=cwd,
        )
        self.ctx = CheckContext(argv, options, groups, on_result)

    @property
    def facts(self) -> dict[str, Any]:
        """What the run learnt about the server (the JSON report's ``facts``)."""
        return self.ctx.facts

    @property
    def results(self) -> list[CheckResult]:
        return self.ctx.results

    def run(self) -> list[CheckResult]:
        ctx = self.ctx
        selected = [g for g in REGISTRY if ctx.wants(g.name)]
        try:
            self._run(selected)
        finally:
            for p in ctx.processes:
                if p.alive or not p.stdout_closed:
                    p.stop()
        for g in selected:
            if g.after_all is not None:
                g.after_all(ctx)
        ctx.results[:] = in_report_order(ctx.results)
        return ctx.results

    def _run(self, selected: list[Group]) -> None:
        ctx = self.ctx
        main = ctx.spawn("main")
        probe_modern(ctx, main)
        ctx.slow = find_slow_tool(ctx.tools or [])
        if ctx.slow is not None:
            ctx.facts["slow_tool"] = ctx.slow.name
        for g in selected:
            if g.on_main is not None:
                g.on_main(ctx, main)
        for g in selected:
            if g.before_stop is not None:
                g.before_stop(ctx)
        main.stop()
        for g in selected:
            if g.own is not None:
                g.own(ctx)


def probe_modern(ctx: CheckContext, p: ServerProcess) -> None:
    """The first request a modern client sends: ``server/discover``
    (spec: basic/transports/stdio#backward-compatibility); what it finds goes into ``ctx``."""
    resp = p.request(DISCOVER, timeout=ctx.options.startup_timeout)
    ctx.facts["first_probe"] = resp
    if resp is None:
        ctx.probe_outcome = "exited" if not p.alive else "timeout"
    elif is_discover_result(resp):
        ctx.probe_outcome = "modern"
        ctx.discover = resp["result"]
        ctx.capabilities = resp["result"]["capabilities"]
    elif error_code(resp) in MODERN_ERROR_CODES:
        ctx.probe_outcome = f"modern error {error_code(resp)}"
    elif "error" in resp:
        ctx.probe_outcome = f"error {error_code(resp)}"
    else:
        ctx.probe_outcome = "non-discover result"
    ctx.modern = ctx.probe_outcome.startswith("modern")
    info = (ctx.discover or {}).get("_meta", {}) if ctx.discover else {}
    server_info = info.get(SERVER_INFO_KEY) if isinstance(info, dict) else None
    if isinstance(server_info, dict):
        ctx.facts["server"] = f"{server_info.get('name')} {server_info.get('version')}"
    ctx.tools = ctx.list_all(p, "tools") if ctx.modern else None
