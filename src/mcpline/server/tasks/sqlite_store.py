"""`SqliteTaskStore`: tasks in a SQLite file (standard library ``sqlite3``), for one machine.

The file is opened in WAL mode with ``synchronous=FULL``: a task is on disk before its
``CreateTaskResult`` is sent, survives a restart of the server, and can be shared by several
server processes on the machine (each change is one ``BEGIN IMMEDIATE`` transaction, so two
processes never both apply a change to the same record). Every call runs on one thread of
the store's own, off the event loop. ``sqlite3`` is imported when the store opens.

One table, ``mcpline_tasks(scope, id, expires, data, owner, size)``: ``data`` is the
record's JSON, ``owner`` and ``size`` (its length) are what quotas count; ``expires`` is
indexed for `purge`, ``(scope, owner, expires, size)`` for counting. A file made by an
earlier version gains the two columns when the store opens it.

The records hold the arguments and results of calls, so the file is the owner's alone: it is
created ``0600`` (whatever the umask) and an existing one is made ``0600`` when the store
opens, its ``-wal``, ``-shm`` and ``-journal`` files included. SQLite creates those later
files with the mode of the database file, so they stay ``0600`` without touching the
process-wide umask (which other threads would see).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .quota import QuotaExceeded, TaskQuota, Usage
from .store import (
    DEFAULT_LEASE,
    Change,
    TaskRecord,
    decode_record,
    encode_record,
    now_ms,
    renew_records,
)

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")

FILE_MODE = 0o600
"""The mode of the database file and of SQLite's files beside it."""
COMPANIONS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside the database (suffixes of its path)."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcpline_tasks ("
    " scope TEXT NOT NULL, id TEXT NOT NULL, expires INTEGER, data BLOB NOT NULL,"
    " owner TEXT NOT NULL DEFAULT '', size INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (scope, id)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mcpline_tasks_expires ON mcpline_tasks (expires)"
    " WHERE expires IS NOT NULL",
)
INDEXES = (
    "CREATE INDEX IF NOT EXISTS mcpline_tasks_owner ON mcpline_tasks (scope, owner, expires, size)",
)
_LIVE = "scope = ? AND (expires IS NULL OR expires > ?)"


class SqliteTaskStore:
    """``Server(task_store=SqliteTaskStore("tasks.db"))``: tasks in a SQLite file.

    ``lease`` is how long (seconds) a running task's process may go without renewing its
    claim before the task is failed as dead; ``timeout`` how long a call waits for another
    process's write lock.
    """

    shared = True

    def __init__(
        self, path: str | os.PathLike[str], *, lease: float = DEFAULT_LEASE, timeout: float = 10.0
    ) -> None:
        if lease <= 0 or timeout <= 0:
            raise ValueError("lease and timeout must be positive")
        self.path = os.fspath(path)
        self.lease = lease
        self.timeout = timeout
        self._scope = ""
        self._conn: sqlite3.Connection | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    # --- the thread --------------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._pool is None:
            raise RuntimeError("the SQLite task store is not open")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, *args)

    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    def _connect(self) -> None:
        import sqlite3

        private_file(self.path, create=True)
        for suffix in COMPANIONS:
            private_file(self.path + suffix, create=False)
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        self._conn = conn
        self._transaction(self._migrate)

    def _migrate(self, db: sqlite3.Connection) -> None:
        """Create the table, or add the quota columns to one an earlier version made."""
        for statement in SCHEMA:
            db.execute(statement)
        columns = {row[1] for row in db.execute("PRAGMA table_info(mcpline_tasks)")}
        if "owner" not in columns:
            db.execute("ALTER TABLE mcpline_tasks ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
            db.execute("ALTER TABLE mcpline_tasks ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
            rows = db.execute("SELECT scope, id, data FROM mcpline_tasks").fetchall()
            for scope, task_id, data in rows:
                db.execute(
                    "UPDATE mcpline_tasks SET owner = ?, size = ? WHERE scope = ? AND id = ?",
                    (decode_record(data).owner, len(data), scope, task_id),
                )
        for statement in INDEXES:
            db.execute(statement)

    def _usage(self, db: sqlite3.Connection, owner: str, now: int) -> tuple[Usage, Usage]:
        mine = db.execute(
            f"SELECT COUNT(*), TOTAL(size) FROM mcpline_tasks WHERE {_LIVE} AND owner = ?",
            (self._scope, now, owner),
        ).fetchone()
        total = db.execute(
            f"SELECT COUNT(*), TOTAL(size) FROM mcpline_tasks WHERE {_LIVE}", (self._scope, now)
        ).fetchone()
        return Usage(mine[0], int(mine[1])), Usage(total[0], int(total[1]))

    def _check(
        self, db: sqlite3.Connection, quota: TaskQuota | None, owner: str, tasks: int, size: int
    ) -> None:
        if quota is None or (tasks <= 0 and size <= 0):
            return
        mine, total = self._usage(db, owner, now_ms())
        refusal = quota.refusal(owner, mine, total, tasks, size)
        if refusal is not None:
            raise QuotaExceeded(refusal)

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    def _read(self, db: sqlite3.Connection, task_id: str) -> TaskRecord | None:
        row = self._row(db, task_id)
        return None if row is None else decode_record(row)

    def _row(self, db: sqlite3.Connection, task_id: str) -> bytes | None:
        row = db.execute(
            "SELECT data FROM mcpline_tasks WHERE scope = ? AND id = ?", (self._scope, task_id)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def _write(self, db: sqlite3.Connection, rec: TaskRecord, data: bytes | None = None) -> None:
        data = encode_record(rec) if data is None else data
        db.execute(
            "UPDATE mcpline_tasks SET expires = ?, data = ?, size = ? WHERE scope = ? AND id = ?",
            (rec.expires, data, len(data), self._scope, rec.id),
        )

    # --- the TaskStore protocol --------------------------------------------------------------

    async def open(self, scope: str) -> None:
        if self._pool is not None:
            return
        self._scope = scope
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mcpline-tasks")
        try:
            await self._call(self._connect)
        except BaseException:
            self._pool.shutdown(wait=False)
            self._pool = None
            raise

    async def aclose(self) -> None:
        pool = self._pool
        if pool is None:
            return

        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        await self._call(close)
        self._pool = None
        pool.shutdown(wait=True)

    async def create(self, rec: TaskRecord, quota: TaskQuota | None = None) -> None:
        data = encode_record(rec)

        def insert(db: sqlite3.Connection) -> None:
            import sqlite3

            self._check(db, quota, rec.owner, 1, len(data))
            try:
                db.execute(
                    "INSERT INTO mcpline_tasks (scope, id, expires, data, owner, size)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (self._scope, rec.id, rec.expires, data, rec.owner, len(data)),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"task {rec.id!r} exists already") from None

        await self._call(self._transaction, insert)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await self._call(lambda: self._read(self._db(), task_id))

    async def get_many(self, ids: Iterable[str]) -> dict[str, TaskRecord]:
        wanted = list(dict.fromkeys(ids))

        def select() -> dict[str, TaskRecord]:
            out: dict[str, TaskRecord] = {}
            db = self._db()
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT data FROM mcpline_tasks WHERE scope = ? AND id IN ({marks})",
                    (self._scope, *chunk),
                )
                for (data,) in rows:
                    rec = decode_record(data)
                    out[rec.id] = rec
            return out

        return await self._call(select) if wanted else {}

    async def update(
        self, task_id: str, change: Change, quota: TaskQuota | None = None
    ) -> TaskRecord | None:
        def apply(db: sqlite3.Connection) -> TaskRecord | None:
            raw = self._row(db, task_id)
            if raw is None:
                return None
            rec = decode_record(raw)
            new = change(rec)
            if new is None:
                return rec
            data = encode_record(new)
            self._check(db, quota, rec.owner, 0, len(data) - len(raw))
            self._write(db, new, data)
            return new

        return await self._call(self._transaction, apply)

    async def renew(self, worker: str, ids: Iterable[str], until: int) -> dict[str, str]:
        wanted = list(ids)

        def apply(db: sqlite3.Connection) -> dict[str, str]:
            found = ((i, self._read(db, i)) for i in wanted)
            stop, extended = renew_records(found, worker, until)
            for rec in extended:
                self._write(db, rec)
            return stop

        return await self._call(self._transaction, apply) if wanted else {}

    async def purge(self, now: int) -> int:
        def delete() -> int:
            cur = self._db().execute(
                "DELETE FROM mcpline_tasks"
                " WHERE scope = ? AND expires IS NOT NULL AND expires <= ?",
                (self._scope, now),
            )
            return int(cur.rowcount)

        return await self._call(delete)

    async def count(self) -> int:
        def select() -> int:
            row = (
                self._db()
                .execute("SELECT COUNT(*) FROM mcpline_tasks WHERE scope = ?", (self._scope,))
                .fetchone()
            )
            return int(row[0])

        return await self._call(select)

    async def usage(self, owner: str) -> tuple[Usage, Usage]:
        return await self._call(lambda: self._usage(self._db(), owner, now_ms()))


def private_file(path: str, *, create: bool) -> None:
    """Make ``path`` a file only its owner may read or write (``0600``), creating it empty
    with that mode when ``create`` (the umask cannot widen it); a missing file is left
    missing when not ``create``. `PermissionError` when the file is not ours to restrict.
    (On Windows, where modes are not permissions, the file is only created.)"""
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, FILE_MODE)
    except FileNotFoundError:
        if create:
            raise
        return
    try:
        if sys.platform != "win32" and stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


__all__ = [
    "FILE_MODE",
    "INDEXES",
    "private_file",
    "SCHEMA",
    "SqliteTaskStore",
]
