"""A lifespan hook: open a resource once at start-up, share it with every request, close it at exit.

A guestbook in SQLite (from the standard library), over stdio:
``python examples/lifespan.py`` or ``mcpline run examples/lifespan.py``; the database is the
file named by ``$GUESTBOOK_DB``, else one in memory.

``Server(lifespan=open_guestbook)`` takes an async context manager factory. It is entered when
the server starts; what it yields is ``ctx.lifespan`` in every handler. Requests other than
``server/discover`` wait until it has been entered, and get -32603 if it failed. The code after
``yield`` runs once, at shutdown (end of input or SIGTERM).

Plain ``def`` tools run on worker threads, several at once: the connection is opened with
``check_same_thread=False`` and every use of it takes the guestbook's lock.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from mcpline import Context, Server

DB_FILE = os.environ.get("GUESTBOOK_DB", ":memory:")


@dataclass
class Guestbook:
    """The state every request shares: one connection, used under one lock."""

    db: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sign(self, name: str) -> int:
        with self.lock, self.db:  # one transaction, committed on success
            self.db.execute("INSERT INTO guests (name) VALUES (?)", (name,))
            (count,) = self.db.execute("SELECT COUNT(*) FROM guests").fetchone()
        return int(count)

    def names(self) -> list[str]:
        with self.lock:
            return [row[0] for row in self.db.execute("SELECT name FROM guests ORDER BY rowid")]


@contextlib.asynccontextmanager
async def open_guestbook(server: Server) -> AsyncIterator[Guestbook]:
    db = sqlite3.connect(DB_FILE, check_same_thread=False)
    try:
        with db:
            db.execute("CREATE TABLE IF NOT EXISTS guests (name TEXT NOT NULL)")
        print(f"{server.name}: opened {DB_FILE}", file=sys.stderr)
        yield Guestbook(db)
    finally:
        db.close()
        print(f"{server.name}: closed {DB_FILE}", file=sys.stderr)


server = Server("guestbook", version="1.0.0", lifespan=open_guestbook)


@server.tool()
def sign(name: str, ctx: Context) -> int:
    """Sign the guestbook; returns how many signatures it now holds."""
    book: Guestbook = ctx.lifespan
    return book.sign(name)


@server.tool(annotations={"read_only": True})
def guests(ctx: Context) -> list[str]:
    """Everyone who signed, in order."""
    book: Guestbook = ctx.lifespan
    return book.names()


if __name__ == "__main__":
    server.run()
