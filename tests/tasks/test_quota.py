"""The task quota rule (`mcpline.server.tasks.quota`), pure: which bucket a task counts in,
which bound a write breaks, the answer at the limit, and the spec that configures it."""

from __future__ import annotations

import pytest

from mcpline.server.tasks.manager import quota_error
from mcpline.server.tasks.quota import (
    MIB,
    QUOTA_ENV,
    TASK_QUOTA_EXCEEDED,
    Refusal,
    TaskQuota,
    Usage,
    resolve_quota,
)

Q = TaskQuota(
    tasks=10, bytes=1000, anonymous_tasks=2, anonymous_bytes=100, total_tasks=15, total_bytes=1500
)


def test_defaults_bound_a_flood_well_under_300_mib() -> None:
    q = TaskQuota()
    assert q.bytes <= 64 * MIB and q.anonymous_bytes <= 32 * MIB and q.total_bytes <= 128 * MIB
    assert q.anonymous_tasks < q.tasks < q.total_tasks
    assert q.anonymous_bytes < q.bytes < q.total_bytes


def test_principals_have_buckets_of_their_own_and_anonymous_callers_share_one() -> None:
    own, server = Q.bounds("digest-of-alice")
    assert (own.bucket, own.key, own.tasks, own.bytes) == ("principal", "digest-of-alice", 10, 1000)
    assert (server.bucket, server.tasks, server.bytes) == ("server", 15, 1500)
    anon, _ = Q.bounds("")
    assert (anon.bucket, anon.tasks, anon.bytes) == ("anonymous", 2, 100)


@pytest.mark.parametrize(
    ("owner", "mine", "total", "tasks", "size", "expected"),
    [
        ("a", Usage(9, 900), Usage(9, 900), 1, 100, None),  # exactly at both limits
        ("a", Usage(10, 0), Usage(10, 0), 1, 1, Refusal("principal", "tasks", 10)),
        ("a", Usage(0, 950), Usage(0, 950), 1, 51, Refusal("principal", "bytes", 1000)),
        ("a", Usage(1, 10), Usage(15, 10), 1, 1, Refusal("server", "tasks", 15)),
        ("a", Usage(1, 10), Usage(1, 1490), 1, 11, Refusal("server", "bytes", 1500)),
        ("", Usage(2, 0), Usage(2, 0), 1, 1, Refusal("anonymous", "tasks", 2)),
        ("", Usage(0, 99), Usage(0, 99), 1, 2, Refusal("anonymous", "bytes", 100)),
        # a change adds no task: only its growth is checked, and a shrink always fits
        ("a", Usage(10, 1000), Usage(15, 1500), 0, 0, None),
        ("a", Usage(10, 1000), Usage(15, 1500), 0, -500, None),
        ("a", Usage(10, 999), Usage(10, 999), 0, 2, Refusal("principal", "bytes", 1000)),
        # the principal's own bucket is named before the server's
        ("a", Usage(10, 1000), Usage(15, 1500), 1, 1, Refusal("principal", "tasks", 10)),
    ],
)
def test_the_rule(
    owner: str, mine: Usage, total: Usage, tasks: int, size: int, expected: Refusal | None
) -> None:
    assert Q.refusal(owner, mine, total, tasks, size) == expected


def test_the_answer_at_the_limit_is_a_documented_json_rpc_error() -> None:
    refusal = Refusal("principal", "bytes", 64 * MIB)
    err = quota_error(refusal).to_error()
    assert err["code"] == TASK_QUOTA_EXCEEDED == -32010
    assert err["message"] == (
        "Task quota exceeded: this principal may keep at most 64 MiB of task data at once; "
        "tasks count until their ttlMs ends"
    )
    assert err["data"] == {"quota": "bytes", "bucket": "principal", "limit": 64 * MIB}
    assert refusal.to_error() == err
    anon = Refusal("anonymous", "tasks", 128).message
    assert "callers without credentials (together) may keep at most 128 tasks" in anon
    assert "the server (all callers together)" in Refusal("server", "bytes", 1000).message


def test_a_spec_sets_any_of_the_bounds() -> None:
    q = TaskQuota.parse("tasks=5, bytes=2MiB,anonymous-tasks=1,total_bytes=1GiB,anonymous_bytes=7")
    assert q == TaskQuota(
        tasks=5, bytes=2 * MIB, anonymous_tasks=1, anonymous_bytes=7, total_bytes=1 << 30
    )
    assert TaskQuota.parse("") == TaskQuota()
    assert TaskQuota.parse("bytes=3kib").bytes == 3072
    assert TaskQuota.parse(q.spec()) == q


@pytest.mark.parametrize(
    "spec", ["tasks", "tasks=", "tasks=-1", "tasks=0", "size=5", "bytes=1.5MiB", "bytes=1TB"]
)
def test_a_bad_spec_says_what_is_wrong(spec: str) -> None:
    with pytest.raises(ValueError, match="task quota"):
        TaskQuota.parse(spec)


def test_bounds_must_be_positive_integers() -> None:
    with pytest.raises(ValueError, match="total_tasks"):
        TaskQuota(total_tasks=0)
    with pytest.raises(ValueError, match="bytes"):
        TaskQuota(bytes=1.5)  # type: ignore[arg-type]


def test_the_quota_comes_from_the_server_option_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(QUOTA_ENV, raising=False)
    assert resolve_quota(None) == TaskQuota()
    monkeypatch.setenv(QUOTA_ENV, "tasks=7")
    assert resolve_quota(None).tasks == 7
    assert resolve_quota("tasks=3").tasks == 3  # the option wins over the environment
    given = TaskQuota(tasks=2)
    assert resolve_quota(given) is given
    monkeypatch.setenv(QUOTA_ENV, "tasks=lots")
    with pytest.raises(ValueError, match=r"\$MCPLINE_TASK_QUOTA: task quota"):
        resolve_quota(None)
    with pytest.raises(ValueError, match="task_quota: task quota"):
        resolve_quota("nonsense")


def test_mcpline_run_checks_its_task_quota_flag() -> None:
    import subprocess
    import sys

    from ..proc import EXAMPLES

    cli = "import sys; from mcpline.cli import main; sys.exit(main())"
    argv = [sys.executable, "-c", cli, "run", str(EXAMPLES / "quickstart.py")]
    done = subprocess.run(
        [*argv, "--task-quota", "tasks=many"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "--task-quota" in done.stderr and "tasks=" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
