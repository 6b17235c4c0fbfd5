"""mcpline beside the official SDK on the conformance suite's server scenarios.

``collect()`` serves ``examples/servers/everything.py`` with ``mcpline run --http`` and the SDK
fixture (``sdk_fixture.py``), runs the same selections against both (both requirement sets,
the pending 2026-07-28 suite) and returns the runs; ``render(runs)`` is the Markdown of
``docs/conformance.md``. As a script it writes that file:

    python -m tests.conformance.compare docs/conformance.md
"""

from __future__ import annotations

import contextlib
import datetime
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import harness, provision

REPO = Path(__file__).resolve().parents[2]
EVERYTHING = REPO / "examples" / "servers" / "everything.py"
MCPLINE = Path(sys.executable).parent / "mcpline"
READY = re.compile(r"listening on (http://\S+)")


@dataclass(frozen=True)
class Selection:
    title: str
    requirements: str | None = None
    suite: str | None = None
    spec_version: str | None = None


SELECTIONS = (
    Selection("2026-07-28 requirements", requirements="2026-07-28"),
    Selection("2025-11-25 requirements", requirements="2025-11-25"),
    Selection("2026-07-28 pending suite", suite="pending", spec_version="2026-07-28"),
)
PENDING_2026 = (
    "json-schema-2020-12",
    "http-header-validation",
    "http-custom-header-server-validation",
)
TASKS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
"""The tasks extension's scenarios (SEP-2663): run, not scored, with the 2026-07-28 set."""
TASKS_SKIPPED = ("tasks-status-notifications",)
"""Skipped by the suite itself (its harness does not open subscriptions/listen yet)."""


@contextlib.contextmanager
def serve_mcpline(startup_timeout: float = 120.0) -> Iterator[str]:
    """``mcpline run examples/servers/everything.py --http 127.0.0.1:0``; yields its URL."""
    proc = subprocess.Popen(
        [str(MCPLINE), "run", str(EVERYTHING), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found: list[str] = []
    seen = threading.Event()
    tail: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line)
            del tail[:-200]
            if not found and (m := READY.search(line)):
                found.append(m[1])
                seen.set()
        seen.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        seen.wait(startup_timeout)
        if not found:
            raise harness.HarnessError(f"mcpline did not start:\n{''.join(tail)}")
        yield found[0]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_all(url: str, *, judged: bool = False) -> dict[str, harness.ServerRun]:
    """Every selection against ``url``. For a ``judged`` server (one whose every required
    scenario must pass), a requirement set's scored failures are run again alone
    (`harness.rerun_server_alone`), and the table says so; a server only recorded is not."""
    runs = {}
    for s in SELECTIONS:
        run = harness.run_server(
            url, requirements=s.requirements, suite=s.suite, spec_version=s.spec_version
        )
        if judged and s.requirements:
            harness.rerun_server_alone(url, run, s.requirements)
        runs[s.title] = run
    return runs


def collect() -> dict[str, dict[str, harness.ServerRun]]:
    """{"mcpline": runs, "sdk": runs}, each keyed by selection title."""
    provision.provision()
    with serve_mcpline() as url:
        ours = run_all(url, judged=True)
    with harness.serve_sdk_fixture() as url:
        theirs = run_all(url)
    return {"mcpline": ours, "sdk": theirs}


def required(run: harness.ServerRun) -> list[harness.ScenarioResult]:
    """The scenarios a requirement set scores."""
    return [r for r in run.results if r.scored]


def tasks(runs: dict[str, harness.ServerRun]) -> list[harness.ScenarioResult]:
    """The ``tasks-*`` scenarios the suite runs (not the one it skips), from the 2026-07-28
    requirements run."""
    by = runs["2026-07-28 requirements"].by_scenario()
    return [by[name] for name in TASKS if name in by and name not in TASKS_SKIPPED]


def count(results: list[harness.ScenarioResult]) -> str:
    """``passed/run``."""
    return f"{sum(r.status == harness.PASS for r in results)}/{len(results)}"


def _cell(result: harness.ScenarioResult | None) -> str:
    if result is None:
        return "—"
    details = " ".join(result.details.split()).replace("|", "\\|")
    if len(details) > 140:
        details = details[:139] + "…"
    return f"{result.status.upper()} ({details})"


def _scored(result: harness.ScenarioResult) -> str:
    if result.scored is None:
        return "—"
    if result.scored:
        return "yes"
    return f"no ({result.reason})" if result.reason else "no"


def scenario_rows(columns: Sequence[dict[str, harness.ScenarioResult]]) -> list[str]:
    """A table row per scenario that any column ran, in the order they first appear: its
    name, whether it is scored (as the first column that ran it says), each column's result."""
    rows = []
    for name in dict.fromkeys(name for column in columns for name in column):
        first = next(column[name] for column in columns if name in column)
        cells = " | ".join(_cell(column.get(name)) for column in columns)
        rows.append(f"| `{name}` | {_scored(first)} | {cells} |")
    return rows


def render(runs: dict[str, dict[str, harness.ServerRun]]) -> str:
    ours, theirs = runs["mcpline"], runs["sdk"]
    today = datetime.date.today().isoformat()
    lines = [
        "The official MCP conformance suite "
        f"(`@modelcontextprotocol/conformance@{provision.CONFORMANCE_VERSION}`, server scenarios) "
        "against `mcpline run examples/servers/everything.py --http 127.0.0.1:PORT`, beside the "
        "official Python SDK (`mcp` 2.3.0) serving the same fixture contract "
        "(`tests/conformance/sdk_fixture.py`). One URL serves both eras in each server.",
        "",
        f"Generated on {today} with `python -m tests.conformance.compare docs/conformance.md`; "
        "`tests/conformance/test_server_conformance.py` runs the same selections, fails on any "
        "required scenario (or pending 2026-07-28 HTTP scenario) that does not pass, and writes "
        "this table to `.cache/conformance.md`. A required scenario that fails is run again "
        "alone, and its cell says so.",
        "",
        "| selection | mcpline | official SDK |",
        "|---|---|---|",
    ]
    for sel in SELECTIONS:
        if sel.requirements:
            a, b = required(ours[sel.title]), required(theirs[sel.title])
            lines.append(f"| {sel.title}: required scenarios passing | {count(a)} | {count(b)} |")
        else:
            a, b = ours[sel.title].results, theirs[sel.title].results
            lines.append(f"| {sel.title}: scenarios passing | {count(a)} | {count(b)} |")
    a, b = tasks(ours), tasks(theirs)
    lines.append(
        f"| tasks extension (`tasks-*`, {len(TASKS) - len(TASKS_SKIPPED)} run by the suite): "
        f"scenarios passing | {count(a)} | {count(b)} |"
    )
    lines += [
        "",
        "Not scored under a requirement set: the `tasks-*` scenarios test the tasks extension "
        "(SEP-2663), which mcpline implements (see docs/tasks.md) and the SDK fixture does not; "
        "the suite skips `tasks-status-notifications` itself (its harness does not open "
        "`subscriptions/listen` yet; `tests/tasks/test_scenarios_stdio.py` checks it over "
        "stdio). Pending and added-after-release scenarios are listed with their reason.",
    ]
    for sel in SELECTIONS:
        lines += ["", f"### {sel.title}", ""]
        lines += ["| scenario | scored | mcpline | official SDK |", "|---|---|---|---|"]
        lines += scenario_rows([ours[sel.title].by_scenario(), theirs[sel.title].by_scenario()])
    return "\n".join(lines) + "\n"


BEGIN = "<!-- server:begin"
END = "<!-- server:end -->"


def splice(document: str, section: str) -> str:
    """``document`` with the part between its server markers replaced by ``section`` (the
    client results beside it are kept); the section alone when there are no markers."""
    start = document.find(BEGIN)
    end = document.find(END)
    if start < 0 or end < start:
        return section
    start = document.index("\n", start) + 1
    return document[:start] + section + document[end:]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else REPO / "docs" / "conformance.md"
    old = target.read_text("utf-8") if target.exists() else ""
    text = splice(old, render(collect()))
    target.write_text(text, "utf-8")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
