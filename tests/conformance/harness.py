"""Run the official MCP conformance suite against an HTTP MCP server and parse what it found.

``run_server(url, ...)`` runs ``conformance server --url URL`` (pinned by ``provision``, under
Node 22) with ``--output-dir`` pointed at a temporary directory, then reads every scenario's
``checks.json`` there: one ``ScenarioResult`` (scenario, status, details, checks) per scenario
run. ``markdown_table(results)`` renders them for an issue or a report.

Selecting what runs mirrors the CLI, which rejects mixing a requirement set with the rest:

    run_server(url, requirements="2026-07-28")        # the frozen set, required + not scored
    run_server(url, scenario="tools-list", spec_version="2025-11-25")
    run_server(url, suite="pending", spec_version="2026-07-28")

Under ``requirements`` each result says whether the set scores it (``scored``) and, when not,
why (``reason``: extension, added-after-release or pending), from the CLI's own report.

As a script it can also start the SDK fixture (``sdk_fixture.py``) itself:

    python -m tests.conformance.harness --sdk-fixture --requirements 2026-07-28
    python -m tests.conformance.harness --url http://127.0.0.1:8000/mcp --suite pending \\
        --spec-version 2026-07-28
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..provisioning import ProvisionError
from . import provision

HERE = Path(__file__).resolve().parent
SDK_FIXTURE = HERE / "sdk_fixture.py"
REVISIONS = ("2025-11-25", "2026-07-28")

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SCENARIO_MS = 240_000
"""Each scenario's time (the runner's ``--timeout``; its default is 30 s): a machine under heavy
load must not turn a slow answer into a failure. A hung scenario still ends, at this bound."""
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
CLIENT_RESULT_DIR = re.compile(r"^(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
RUNNING = re.compile(r"^=== Running scenario: (?P<scenario>\S+) ===$")
RUNNING_ONE = re.compile(
    r"^(?:Running client scenario '(?P<scenario>[^']+)' against server"
    r"|Starting scenario: (?P<client_scenario>\S+))"
)
SUMMARY = re.compile(r"^[✓✗] (?P<scenario>\S+): (?P<passed>\d+) passed, (?P<failed>\d+) failed")
NOT_SCORED = re.compile(r"^\s+[✓✗] (?P<scenario>\S+) \((?P<reason>[^)]+)\)$")
SKIPPED_ONE = re.compile(r"^SKIPPED: scenario '(?P<scenario>[^']+)' is not applicable")

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"


class HarnessError(RuntimeError):
    """The suite could not be run, or its output could not be understood."""


@dataclass(frozen=True)
class Check:
    """One entry of a scenario's checks.json."""

    id: str
    status: str  # SUCCESS, FAILURE, WARNING, SKIPPED or INFO, as the suite writes it
    description: str
    error: str | None = None


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    status: str  # pass, warn, fail or skip
    details: str
    checks: tuple[Check, ...] = ()
    scored: bool | None = None  # None unless run under a requirement set
    reason: str | None = None  # why not scored, under a requirement set


@dataclass
class ServerRun:
    command: list[str]
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    results: list[ScenarioResult] = field(default_factory=list)
    rerun: tuple[str, ...] = ()
    """Scenarios whose result is from running them again alone (`rerun_server_alone`)."""

    def by_scenario(self) -> dict[str, ScenarioResult]:
        return {r.scenario: r for r in self.results}

    @property
    def exit_ok(self) -> bool:
        """The runner exited 0, or its failures were run again alone (`rerun`): it exits 1
        for those, and the results say how they went."""
        return self.exit_code == 0 or bool(self.rerun)


def _checks_from(path: Path) -> tuple[Check, ...]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise HarnessError(f"unreadable {path}: {e}") from e
    if not isinstance(raw, list):
        raise HarnessError(f"{path}: expected a JSON array of checks, got {type(raw).__name__}")
    checks = []
    for item in raw:
        if not isinstance(item, dict) or "id" not in item or "status" not in item:
            raise HarnessError(f"{path}: malformed check {item!r:.200}")
        checks.append(
            Check(
                id=str(item["id"]),
                status=str(item["status"]),
                description=str(item.get("description", "")),
                error=item.get("errorMessage"),
            )
        )
    return tuple(checks)


def _verdict(checks: Sequence[Check]) -> tuple[str, str]:
    """(status, details) of one scenario from its checks: failures, then warnings, first."""
    failures = [c for c in checks if c.status == "FAILURE"]
    warnings = [c for c in checks if c.status == "WARNING"]
    successes = [c for c in checks if c.status == "SUCCESS"]

    def describe(cs: Sequence[Check]) -> str:
        seen: dict[str, str] = {}
        for c in cs:
            seen.setdefault(
                c.id,
                (c.error or c.description).splitlines()[0][:160]
                if (c.error or c.description)
                else "",
            )
        return "; ".join(f"{cid}: {msg}" if msg else cid for cid, msg in seen.items())

    tally = f"{len(successes)}/{len(successes) + len(failures)} checks passed"
    if failures:
        return FAIL, f"{tally}; failed: {describe(failures)}"
    if warnings:
        return WARN, f"{tally}; warnings: {describe(warnings)}"
    if successes:
        skipped = [c for c in checks if c.status == "SKIPPED"]
        return PASS, tally + (f" ({len(skipped)} skipped)" if skipped else "")
    return SKIP, "no check passed or failed" + (f" ({len(checks)} info/skipped)" if checks else "")


def _result_files(output_dir: Path, pattern: re.Pattern[str]) -> dict[str, Path]:
    """scenario → checks.json; a client run nests ``auth/NAME`` results one level down."""
    files: dict[str, Path] = {}
    if not output_dir.is_dir():
        return files
    for child in sorted(output_dir.iterdir()):
        if not child.is_dir():
            continue
        if (m := pattern.match(child.name)) and (child / "checks.json").is_file():
            files[m["scenario"]] = child / "checks.json"
        elif pattern is CLIENT_RESULT_DIR:
            for sub in sorted(child.iterdir()):
                if (m := pattern.match(sub.name)) and (sub / "checks.json").is_file():
                    files[f"{child.name}/{m['scenario']}"] = sub / "checks.json"
    return files


def parse_run(stdout: str, output_dir: Path, *, client: bool = False) -> list[ScenarioResult]:
    """Results of one ``conformance server`` (or ``client``) run from its output and
    ``--output-dir``."""
    lines = [ANSI.sub("", line).rstrip() for line in stdout.splitlines()]
    order: list[str] = []
    summary: dict[str, tuple[int, int]] = {}
    not_scored: dict[str, str] = {}
    skipped: set[str] = set()
    in_not_scored = False
    for line in lines:
        if m := RUNNING.match(line) or RUNNING_ONE.match(line):
            name = m["scenario"] or m.groupdict().get("client_scenario")
            if name and name not in order:
                order.append(name)
        elif m := SKIPPED_ONE.match(line):
            skipped.add(m["scenario"])
            order.append(m["scenario"])
        elif line.startswith("Not scored for "):
            in_not_scored = True
        elif in_not_scored and (m := NOT_SCORED.match(line)):
            not_scored[m["scenario"]] = m["reason"]
        elif m := SUMMARY.match(line):
            summary[m["scenario"]] = (int(m["passed"]), int(m["failed"]))

    files = _result_files(output_dir, CLIENT_RESULT_DIR if client else RESULT_DIR)
    for name in files:
        if name not in order:
            order.append(name)

    under_requirements = any(line.startswith("Running requirements ") for line in lines)
    results = []
    for name in order:
        if name in files:
            checks = _checks_from(files[name])
            status, details = _verdict(checks)
        elif name in skipped:
            checks, status, details = (), SKIP, "not applicable at the requested spec version"
        elif name in summary:
            # The runner caught an exception before writing checks.json.
            checks, status = (), FAIL if summary[name][1] else SKIP
            details = (
                f"no checks.json; summary says {summary[name][0]} passed, {summary[name][1]} failed"
            )
        else:
            checks, status, details = (), FAIL, "scenario started but left no result"
        scored = (name not in not_scored) if under_requirements else None
        results.append(
            ScenarioResult(
                name, status, details, checks, scored=scored, reason=not_scored.get(name)
            )
        )
    return results


def _selection(
    requirements: str | None,
    suite: str | None,
    scenario: str | None,
    spec_version: str | None,
    timeout_ms: int | None,
) -> list[str]:
    """The flags that pick what runs, refused in the combinations the CLI refuses."""
    if requirements is not None and (suite or scenario or spec_version):
        raise ValueError("a requirement set already fixes the scenarios and the wire version")
    if scenario is not None and suite is not None:
        raise ValueError("give a scenario or a suite, not both")
    args: list[str] = []
    for flag, value in (
        ("--requirements", requirements),
        ("--suite", suite),
        ("--scenario", scenario),
        ("--spec-version", spec_version),
        ("--timeout", None if timeout_ms is None else str(timeout_ms)),
    ):
        if value is not None:
            args += [flag, value]
    return args


def server_args(
    url: str,
    *,
    requirements: str | None = None,
    suite: str | None = None,
    scenario: str | None = None,
    spec_version: str | None = None,
    timeout_ms: int | None = None,
    force: bool = False,
) -> list[str]:
    """``force``: run a scenario even where the suite deems it not applicable at
    ``spec_version`` (as a requirement set does for the scenarios it lists)."""
    selection = _selection(requirements, suite, scenario, spec_version, timeout_ms)
    return ["server", "--url", url, *selection, *(["--force"] if force else [])]


def _run(args: list[str], timeout: float, *, client: bool) -> ServerRun:
    """Run the suite with ``args`` into a temporary ``--output-dir`` and parse its output (a
    client run's stdout and stderr both) and what it wrote there."""
    prefix = "conformance-client-" if client else "conformance-"
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        out = Path(tmp) / "results"
        cmd = [*provision.conformance_command(), *args, "--output-dir", str(out)]
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=tmp,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"conformance run exceeded {timeout:.0f}s: {' '.join(cmd)}") from e
        seconds = time.monotonic() - started
        run = ServerRun(cmd, proc.returncode, proc.stdout, proc.stderr, seconds)
        output = proc.stdout + "\n" + proc.stderr if client else proc.stdout
        run.results = parse_run(output, out, client=client)
    if not run.results:
        raise HarnessError(
            f"conformance exited {proc.returncode} and ran no scenario: {' '.join(cmd)}\n"
            f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
        )
    return run


def run_server(
    url: str,
    *,
    requirements: str | None = None,
    suite: str | None = None,
    scenario: str | None = None,
    spec_version: str | None = None,
    timeout_ms: int | None = SCENARIO_MS,
    timeout: float = 1800.0,
    force: bool = False,
) -> ServerRun:
    """Run ``conformance server`` against ``url`` and parse every scenario's result."""
    args = server_args(
        url,
        requirements=requirements,
        suite=suite,
        scenario=scenario,
        spec_version=spec_version,
        timeout_ms=timeout_ms,
        force=force,
    )
    return _run(args, timeout, client=False)


def run_client(
    command: str,
    *,
    requirements: str | None = None,
    suite: str | None = None,
    scenario: str | None = None,
    spec_version: str | None = None,
    timeout_ms: int | None = SCENARIO_MS,
    timeout: float = 1800.0,
) -> ServerRun:
    """Run ``conformance client --command COMMAND`` and parse every scenario's result.

    The suite appends each scenario server's URL to ``command`` and runs it with ``sh -c``.
    Under ``requirements`` or ``suite`` the scenarios run in parallel."""
    selection = _selection(requirements, suite, scenario, spec_version, timeout_ms)
    return _run(["client", "--command", command, *selection], timeout, client=True)


def scored_failures(results: Sequence[ScenarioResult]) -> list[ScenarioResult]:
    """Scenarios a requirement run scores that have a FAILURE check (WARNING does not fail
    a requirement run)."""
    return [r for r in results if r.scored is not False and (r.status == FAIL or not r.checks)]


def _last_alone(
    run: ServerRun, solo: Callable[[str], ServerRun], attempts: int
) -> dict[str, ScenarioResult]:
    """Each scored failure of ``run`` run again alone by ``solo(scenario)``, up to
    ``attempts`` times until it does not fail; the last result of each, by scenario."""
    final: dict[str, ScenarioResult] = {}
    for failed in scored_failures(run.results):
        for _ in range(attempts):
            [result] = [
                r for r in solo(failed.scenario).results if r.scenario == failed.scenario
            ] or [ScenarioResult(failed.scenario, FAIL, "no result when run alone")]
            final[failed.scenario] = result
            if result.status != FAIL and result.checks:
                break
    return final


def rerun_alone(
    command: str, run: ServerRun, spec_version: str, *, attempts: int = 2
) -> dict[str, ScenarioResult]:
    """Run each scored failure of a parallel client ``run`` again, alone (timing-sensitive
    scenarios miss their windows when 40 clients start at once on two cores, which is why
    the python-sdk does the same); the last result of each, by scenario."""

    def solo(scenario: str) -> ServerRun:
        return run_client(command, scenario=scenario, spec_version=spec_version)

    return _last_alone(run, solo, attempts)


def rerun_server_alone(url: str, run: ServerRun, spec_version: str, *, attempts: int = 2) -> None:
    """Run each scored failure of a server requirement ``run`` again, alone, and put the last
    result in its place, saying so in its details and in ``run.rerun``. The runner reads some
    event streams within fixed windows of 0.6-1 s of its own (not its ``--timeout``), which a
    heavily loaded machine can miss; a real failure fails again."""

    def solo(scenario: str) -> ServerRun:
        return run_server(url, scenario=scenario, spec_version=spec_version, force=True)

    first = run.by_scenario()
    again = {
        name: replace(
            result,
            details=f"{result.details} (run again alone; in the whole run: {first[name].details})",
            scored=first[name].scored,
            reason=first[name].reason,
        )
        for name, result in _last_alone(run, solo, attempts).items()
    }
    run.results = [again.get(r.scenario, r) for r in run.results]
    run.rerun = tuple(again)


def _cell(text: str, limit: int = 300) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_table(results: Sequence[ScenarioResult], *, limit: int = 300) -> str:
    """A Markdown table: scenario, status, (scored), details."""
    with_scoring = any(r.scored is not None for r in results)
    head = ["scenario", "status", *(["scored"] if with_scoring else []), "details"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [f"`{r.scenario}`", r.status.upper()]
        if with_scoring:
            cells.append("yes" if r.scored else f"no ({r.reason})" if r.reason else "no")
        cells.append(_cell(r.details, limit))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def tally(results: Sequence[ScenarioResult]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    order = [PASS, WARN, FAIL, SKIP]
    return ", ".join(f"{counts[s]} {s}" for s in order if s in counts)


@contextlib.contextmanager
def serve_sdk_fixture(startup_timeout: float = 120.0) -> Iterator[str]:
    """Start ``sdk_fixture.py`` on a free loopback port; yield its URL; stop it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, str(SDK_FIXTURE), "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr_tail: list[str] = []

    def drain_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_tail.append(line)
            del stderr_tail[:-200]

    threading.Thread(target=drain_stderr, daemon=True).start()
    try:
        url = _await_url(proc, startup_timeout)
        if url is None:
            raise HarnessError(
                f"SDK fixture did not report a URL (exit {proc.poll()}):\n{''.join(stderr_tail)}"
            )
        threading.Thread(
            target=lambda: proc.stdout.read() if proc.stdout else None, daemon=True
        ).start()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _await_url(proc: subprocess.Popen[str], timeout: float) -> str | None:
    assert proc.stdout is not None
    found: list[str] = []

    def read_first_line() -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if m := re.search(r"listening on (\S+)", line):
            found.append(m[1])

    reader = threading.Thread(target=read_first_line, daemon=True)
    reader.start()
    reader.join(timeout)
    return found[0] if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the MCP conformance suite's server leg.")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="MCP endpoint of a running server")
    target.add_argument(
        "--sdk-fixture", action="store_true", help="start sdk_fixture.py and test it"
    )
    parser.add_argument("--requirements", choices=REVISIONS)
    parser.add_argument("--suite")
    parser.add_argument("--scenario")
    parser.add_argument("--spec-version")
    parser.add_argument("--json", action="store_true", help="print results as JSON, not Markdown")
    args = parser.parse_args(argv)

    def go(url: str) -> ServerRun:
        return run_server(
            url,
            requirements=args.requirements,
            suite=args.suite,
            scenario=args.scenario,
            spec_version=args.spec_version,
        )

    try:
        if args.sdk_fixture:
            with serve_sdk_fixture() as url:
                run = go(url)
        else:
            run = go(args.url)
    except (HarnessError, ProvisionError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([_as_json(r) for r in run.results], indent=2))
    else:
        print(markdown_table(run.results))
        print(f"\n{tally(run.results)}; exit {run.exit_code}; {run.seconds:.1f}s")
    return run.exit_code


def _as_json(r: ScenarioResult) -> dict[str, Any]:
    return {
        "scenario": r.scenario,
        "status": r.status,
        "details": r.details,
        "scored": r.scored,
        "reason": r.reason,
        "checks": [c.__dict__ for c in r.checks],
    }


if __name__ == "__main__":
    sys.exit(main())
