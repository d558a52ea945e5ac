"""The one SQLite file that sessions and extraction jobs share (the embedded default).

The embedded server keeps them in `<data_dir>/sessions.sqlite3`, next to the
Milvus Lite file. Three tables:

- `sessions`: one row per (tenant, user, session), the Session's fields as
  columns; `recent_requests` and the extraction's `last_results` as JSON.
- `messages`: the window's messages, one row per (tenant, user, session, seq);
  a fold deletes the ones it summarised.
- `extraction_jobs`: queued jobs (the job as JSON), with their due time and
  attempts.

The file is in WAL mode with `synchronous=FULL`: an acknowledged append is on
disk before the call returns and survives a crash of the process or the machine.
Every port call is one transaction, run on the file's own thread (one connection,
one thread), so calls never block the event loop and never interleave. Every
statement names the tenant and the user (`USER_MATCH`, `SESSION_MATCH`): a
session is never selected by its id alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from recalld_server.domain.core.conversation import SessionKey
from recalld_server.domain.core.errors import BackendUnavailableError

_T = TypeVar("_T")

SESSIONS_FILE = "sessions.sqlite3"
"""The file name under the data directory (the embedded default)."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    window_token_count INTEGER NOT NULL,
    summary TEXT NOT NULL,
    summarized_through INTEGER NOT NULL,
    summary_memory_id TEXT NOT NULL,
    requested_through INTEGER NOT NULL,
    extracted_through INTEGER NOT NULL,
    last_results TEXT NOT NULL,
    last_error TEXT NOT NULL,
    recent_requests TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_newest
    ON sessions (tenant_id, user_id, created_at DESC, session_id DESC);
CREATE TABLE IF NOT EXISTS messages (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, session_id, seq)
);
CREATE TABLE IF NOT EXISTS extraction_jobs (
    tenant_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    job TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    due_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, user_id, session_id, job_id)
);
CREATE INDEX IF NOT EXISTS extraction_jobs_due
    ON extraction_jobs (due_ms, created_at, job_id);
"""


USER_MATCH = "tenant_id = ? AND user_id = ?"
"""The rows of one user (parameters: tenant, user)."""

SESSION_MATCH = "tenant_id = ? AND user_id = ? AND session_id = ?"
"""The rows of one session (parameters: `session_params`)."""


def session_params(key: SessionKey) -> tuple[str, str, str]:
    """The parameters of `SESSION_MATCH` for a session."""
    return key.tenant_id, key.user_id, key.session_id


class SqliteFile:
    """One SQLite file: one connection, used only from one thread of its own.

    Shared by the adapters built on it; the last of them to close closes it
    (`close` closes it at once).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="recalld-sqlite"
        )
        self._connection: sqlite3.Connection | None = None
        self._users = 0

    @classmethod
    async def open(cls, path: Path) -> SqliteFile:
        """Opens (or creates) the file and its tables.

        Raises OSError or sqlite3.Error (not BackendUnavailableError) when the file
        cannot be opened: a configuration error to report at startup.
        """
        file = cls(path)
        try:
            await asyncio.get_running_loop().run_in_executor(file._executor, file._connect)
        except BaseException:
            file._executor.shutdown(wait=False)
            raise
        return file

    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA busy_timeout=5000")
            connection.executescript(_SCHEMA)
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    async def _call(self, fn: Callable[[], _T]) -> _T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn)
        except sqlite3.OperationalError as error:  # locked, disk full, I/O error
            raise BackendUnavailableError(f"session store unavailable: {error}") from error

    async def transaction(self, fn: Callable[[sqlite3.Connection], _T], write: bool = True) -> _T:
        """Runs `fn` in one transaction on the file's thread (committed if it returns)."""
        if self._connection is None:
            raise BackendUnavailableError("session store is closed")

        def run() -> _T:
            connection = self._connection
            if connection is None:
                raise BackendUnavailableError("session store is closed")
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = fn(connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return result

        return await self._call(run)

    def acquire(self) -> None:
        """Counts one more adapter using the file."""
        self._users += 1

    async def release(self) -> None:
        """One adapter is done with the file; the last one closes it."""
        self._users -= 1
        if self._users <= 0:
            await self.close()

    async def close(self) -> None:
        """Closes the connection and stops the thread (idempotent)."""
        if self._connection is None:
            return

        def shut() -> None:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

        await self._call(shut)
        self._executor.shutdown(wait=True)
