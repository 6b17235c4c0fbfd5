"""Presenting check results: a terminal report (rich, imported only when used), plain text
for pipes, JSON for machines, and a one-line summary.

What a check saw quotes the server, so the human forms show it through
`mcpline.terminal.for_terminal`; the JSON report keeps it exact."""

from __future__ import annotations

import json
import shlex
from typing import IO, Any

from ..terminal import for_terminal
from .cite import references
from .model import FAIL, PASS, SKIP, WARN, CheckResult, summarize
from .registry import in_report_order

STYLES = {PASS: "green", FAIL: "bold red", WARN: "yellow", SKIP: "dim"}


def summary_line(results: list[CheckResult], facts: dict[str, Any]) -> str:
    c = summarize(results)
    who = facts.get("server") or "server"
    era = facts.get("era")
    tail = f" ({who}{', ' + era if era else ''})"
    verdict = "FAILED" if c[FAIL] else "passed"
    return for_terminal(
        f"mcpline check {verdict}: {c[PASS]} passed, {c[FAIL]} failed, {c[WARN]} warnings, "
        f"{c[SKIP]} skipped{tail}"
    )


def to_json(results: list[CheckResult], facts: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    return {
        "command": argv,
        "summary": summarize(results),
        "ok": not any(r.status == FAIL for r in results),
        "facts": {k: v for k, v in facts.items() if k != "first_probe"},
        "checks": [{**r.to_json(), "refs": references(r.rule)} for r in in_report_order(results)],
    }


def write_json(
    out: IO[str], results: list[CheckResult], facts: dict[str, Any], argv: list[str]
) -> None:
    json.dump(to_json(results, facts, argv), out, indent=2, default=str)
    out.write("\n")


def write_text(
    out: IO[str],
    results: list[CheckResult],
    facts: dict[str, Any],
    argv: list[str],
    *,
    verbose: bool = False,
) -> None:
    """Plain text: one line per check, the rule and observation under each non-PASS."""
    out.write(f"mcpline check -- {shlex.join(argv)}\n")
    group = None
    for r in in_report_order(results):
        if r.group != group:
            group = r.group
            out.write(f"\n[{group}]\n")
        seen = for_terminal(r.seen)
        out.write(f"  {r.status:<4}  {r.id}\n")
        if verbose or r.status in (FAIL, WARN):
            out.write(f"        rule: {r.rule}\n        seen: {seen}\n")
        elif r.status == SKIP:
            out.write(f"        skipped: {seen}\n")
    out.write("\n" + summary_line(results, facts) + "\n")


def write_rich(
    results: list[CheckResult], facts: dict[str, Any], argv: list[str], *, verbose: bool = False
) -> None:
    """A table per group on the terminal."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    console.print(f"[bold]mcpline check[/bold] -- {escape(shlex.join(argv))}")
    group = None
    table: Table | None = None
    for r in in_report_order(results):
        if r.group != group:
            if table is not None:
                console.print(table)
            group = r.group
            table = Table(title=group, title_justify="left", show_header=False, expand=True)
            table.add_column("status", width=4, no_wrap=True)
            table.add_column("check", ratio=1, no_wrap=True)
            table.add_column("detail", ratio=3)
        assert table is not None
        seen = escape(for_terminal(r.seen))
        if verbose or r.status in (FAIL, WARN):
            detail = f"{seen}\n[dim]{escape(r.rule)}[/dim]"
        else:
            detail = f"[dim]{seen}[/dim]"
        table.add_row(f"[{STYLES[r.status]}]{r.status}[/]", escape(r.id), detail)
    if table is not None:
        console.print(table)
    c = summarize(results)
    style = "bold red" if c[FAIL] else "bold green"
    console.print(f"[{style}]{escape(summary_line(results, facts))}[/]", highlight=False)
