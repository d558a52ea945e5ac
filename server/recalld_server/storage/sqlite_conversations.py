"""Sessions and extraction jobs in one SQLite file (the embedded default).

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
statement names the tenant and the user: a session is never selected by its id
alone.

The JSON documents (marks, results, jobs) are `session_records`', shared with the
Redis adapter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    ExtractionJob,
    ExtractionProgress,
    Message,
    RequestMark,
    Role,
    Session,
    SessionCursor,
    SessionKey,
)
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.storage.session_records import (
    appended,
    ended,
    extraction_recorded,
    folded,
    job_from_json,
    job_to_json,
    marks_from_json,
    marks_to_json,
    results_from_json,
    results_to_json,
)

_T = TypeVar("_T")

SESSIONS_FILE = "sessions.sqlite3"
"""The file name under the data directory (the embedded default)."""


# --- The file ------------------------------------------------------------------------------

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


# --- Sessions ------------------------------------------------------------------------------

_SESSION_COLUMNS = (
    "tenant_id, user_id, session_id, agent_scope, created_at, updated_at, ended_at, "
    "message_count, token_count, window_token_count, summary, summarized_through, "
    "summary_memory_id, requested_through, extracted_through, last_results, last_error, "
    "recent_requests"
)
_OWNER = "tenant_id = ? AND user_id = ?"
_ONE = "tenant_id = ? AND user_id = ? AND session_id = ?"


def _key_args(key: SessionKey) -> tuple[str, str, str]:
    return key.tenant_id, key.user_id, key.session_id


def _session_row(session: Session) -> tuple[Any, ...]:
    return (
        *_key_args(session.key),
        session.agent_scope,
        session.created_at,
        session.updated_at,
        session.ended_at,
        session.message_count,
        session.token_count,
        session.window_token_count,
        session.summary,
        session.summarized_through,
        session.summary_memory_id,
        session.extraction.requested_through,
        session.extraction.extracted_through,
        results_to_json(session.extraction.last_results),
        session.extraction.last_error,
        marks_to_json(session.recent_requests),
    )


def _session_from_row(row: Sequence[Any]) -> Session:
    return Session(
        key=SessionKey(row[0], row[1], row[2]),
        agent_scope=row[3],
        created_at=row[4],
        updated_at=row[5],
        ended_at=row[6],
        message_count=row[7],
        token_count=row[8],
        window_token_count=row[9],
        summary=row[10],
        summarized_through=row[11],
        summary_memory_id=row[12],
        extraction=ExtractionProgress(
            requested_through=row[13],
            extracted_through=row[14],
            last_results=results_from_json(row[15]),
            last_error=row[16],
        ),
        recent_requests=marks_from_json(row[17]),
    )


def _read(connection: sqlite3.Connection, key: SessionKey) -> Session | None:
    row = connection.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {_ONE}", _key_args(key)
    ).fetchone()
    return None if row is None else _session_from_row(row)


def _write(connection: sqlite3.Connection, session: Session) -> None:
    connection.execute(
        f"INSERT OR REPLACE INTO sessions ({_SESSION_COLUMNS}) VALUES ({', '.join('?' * 18)})",
        _session_row(session),
    )


def _window(connection: sqlite3.Connection, session: Session) -> list[Message]:
    rows = connection.execute(
        f"SELECT seq, role, content, created_at, token_count FROM messages WHERE {_ONE} "
        "AND seq > ? ORDER BY seq",
        (*_key_args(session.key), session.summarized_through),
    ).fetchall()
    return [
        Message(role=Role(r[1]), content=r[2], created_at=r[3], token_count=r[4], seq=r[0])
        for r in rows
    ]


class SqliteConversations:
    """Sessions and their windows in a SQLite file (see the module docstring)."""

    def __init__(self, file: SqliteFile) -> None:
        self._file = file
        self._closed = False
        file.acquire()

    @classmethod
    async def open(cls, path: Path) -> SqliteConversations:
        """Sessions in the file at `path` (created with its tables if absent)."""
        file = await SqliteFile.open(path)
        return cls(file)

    async def get(self, key: SessionKey) -> Session | None:
        """The session, or None."""
        return await self._file.transaction(lambda c: _read(c, key), write=False)

    async def window(self, key: SessionKey) -> tuple[Session, list[Message]] | None:
        """The session and its messages after `summarized_through`, oldest first."""

        def run(connection: sqlite3.Connection) -> tuple[Session, list[Message]] | None:
            session = _read(connection, key)
            if session is None:
                return None
            return session, _window(connection, session)

        return await self._file.transaction(run, write=False)

    async def append(
        self,
        key: SessionKey,
        agent_scope: str,
        messages: Sequence[Message],
        now_ms: int,
        mark: RequestMark | None,
        extract: bool,
    ) -> tuple[Session, list[Message]]:
        """Numbers and stores messages after the last one, creating the session if absent."""

        def run(connection: sqlite3.Connection) -> tuple[Session, list[Message]]:
            after, numbered = appended(
                _read(connection, key), key, agent_scope, messages, now_ms, mark, extract
            )
            _write(connection, after)
            connection.executemany(
                "INSERT INTO messages (tenant_id, user_id, session_id, seq, role, content, "
                "created_at, token_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (*_key_args(key), m.seq, int(m.role), m.content, m.created_at, m.token_count)
                    for m in numbered
                ],
            )
            return after, numbered

        return await self._file.transaction(run)

    async def fold(
        self, key: SessionKey, through_seq: int, summary: str, expected_through: int
    ) -> Session | None:
        """Replaces the summary and drops folded messages, if nobody folded first."""

        def run(connection: sqlite3.Connection) -> Session | None:
            session = _read(connection, key)
            if session is None or session.summarized_through != expected_through:
                return None
            after, _ = folded(session, _window(connection, session), through_seq, summary)
            connection.execute(
                f"DELETE FROM messages WHERE {_ONE} AND seq <= ?", (*_key_args(key), through_seq)
            )
            _write(connection, after)
            return after

        return await self._file.transaction(run)

    async def end(self, key: SessionKey, now_ms: int, summary_memory_id: str) -> Session | None:
        """Marks the session ended (once: a second end changes nothing)."""

        def run(connection: sqlite3.Connection) -> Session | None:
            session = _read(connection, key)
            if session is None or session.ended:
                return session
            after = ended(session, now_ms, summary_memory_id)
            _write(connection, after)
            return after

        return await self._file.transaction(run)

    async def record_extraction(
        self,
        key: SessionKey,
        through_seq: int,
        results: Sequence[ExtractedResult],
        error: str,
    ) -> None:
        """Notes a finished extraction (error "") or a failed attempt (results ignored)."""

        def run(connection: sqlite3.Connection) -> None:
            session = _read(connection, key)
            if session is not None:
                _write(connection, extraction_recorded(session, through_seq, results, error))

        await self._file.transaction(run)

    async def page(
        self, tenant_id: str, user_id: str, after: SessionCursor | None, limit: int
    ) -> list[Session]:
        """The user's sessions, newest created first, after the cursor."""
        if limit <= 0:
            return []
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {_OWNER}"
        args: list[Any] = [tenant_id, user_id]
        if after is not None:
            sql += " AND (created_at, session_id) < (?, ?)"
            args += [after.created_at, after.session_id]
        sql += " ORDER BY created_at DESC, session_id DESC LIMIT ?"
        args.append(limit)

        def run(connection: sqlite3.Connection) -> list[Session]:
            return [_session_from_row(r) for r in connection.execute(sql, args).fetchall()]

        return await self._file.transaction(run, write=False)

    async def delete(self, key: SessionKey) -> bool:
        """Deletes a session with its messages; False if there was none."""

        def run(connection: sqlite3.Connection) -> bool:
            connection.execute(f"DELETE FROM messages WHERE {_ONE}", _key_args(key))
            return (
                connection.execute(f"DELETE FROM sessions WHERE {_ONE}", _key_args(key)).rowcount
                > 0
            )

        return await self._file.transaction(run)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Deletes every session of a user (or of the whole tenant when None)."""
        where, args = (
            ("tenant_id = ?", (tenant_id,)) if user_id is None else (_OWNER, (tenant_id, user_id))
        )

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(f"DELETE FROM messages WHERE {where}", args)
            connection.execute(f"DELETE FROM sessions WHERE {where}", args)

        await self._file.transaction(run)

    async def close(self) -> None:
        """Releases the file (closed once every adapter on it has closed)."""
        if not self._closed:
            self._closed = True
            await self._file.release()


# --- Extraction jobs -----------------------------------------------------------------------


class SqliteExtractionQueue:
    """Extraction jobs in a SQLite file, leased by claims (see the module docstring)."""

    def __init__(self, file: SqliteFile) -> None:
        self._file = file
        self._closed = False
        file.acquire()

    @classmethod
    async def open(cls, path: Path) -> SqliteExtractionQueue:
        """Jobs in the file at `path` (created with its tables if absent)."""
        file = await SqliteFile.open(path)
        return cls(file)

    async def put(self, job: ExtractionJob) -> None:
        """Queues a job, due at its creation (the same job_id twice is one job)."""
        row = (
            *_key_args(job.key),
            job.job_id,
            job_to_json(job),
            job.created_at,
            job.created_at,
            job.attempts,
        )

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(
                "INSERT OR IGNORE INTO extraction_jobs (tenant_id, user_id, session_id, job_id, "
                "job, created_at, due_ms, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

        await self._file.transaction(run)

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[ExtractionJob]:
        """Leases up to `limit` due jobs, oldest first, counting the attempt."""
        if limit <= 0:
            return []

        def run(connection: sqlite3.Connection) -> list[ExtractionJob]:
            rows = connection.execute(
                "SELECT tenant_id, user_id, session_id, job_id, job, attempts "
                "FROM extraction_jobs WHERE due_ms <= ? "
                "ORDER BY due_ms, created_at, job_id LIMIT ?",
                (now_ms, limit),
            ).fetchall()
            connection.executemany(
                "UPDATE extraction_jobs SET due_ms = ?, attempts = attempts + 1 "
                "WHERE tenant_id = ? AND user_id = ? AND session_id = ? AND job_id = ?",
                [(now_ms + lease_ms, *r[:4]) for r in rows],
            )
            return [job_from_json(r[4], r[5] + 1) for r in rows]

        return await self._file.transaction(run)

    async def done(self, job: ExtractionJob) -> None:
        """Removes a finished job."""
        args = (*_key_args(job.key), job.job_id)

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(f"DELETE FROM extraction_jobs WHERE {_ONE} AND job_id = ?", args)

        await self._file.transaction(run)

    async def delete_session(self, key: SessionKey) -> None:
        """Drops a session's queued jobs."""

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(f"DELETE FROM extraction_jobs WHERE {_ONE}", _key_args(key))

        await self._file.transaction(run)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Drops a user's queued jobs (or the whole tenant's when None)."""
        where, args = (
            ("tenant_id = ?", (tenant_id,)) if user_id is None else (_OWNER, (tenant_id, user_id))
        )

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(f"DELETE FROM extraction_jobs WHERE {where}", args)

        await self._file.transaction(run)

    async def close(self) -> None:
        """Releases the file (closed once every adapter on it has closed)."""
        if not self._closed:
            self._closed = True
            await self._file.release()


async def open_sessions(path: Path) -> tuple[SqliteConversations, SqliteExtractionQueue]:
    """Both adapters on one file at `path`; closing both closes it."""
    file = await SqliteFile.open(path)
    return SqliteConversations(file), SqliteExtractionQueue(file)
