"""Sessions and their windows in SQLite: the durable local Conversations adapter.

The file, its tables and its one thread are `sqlite_file`'s; here a Session
becomes its row and back, and each port call is one transaction on the file.
The JSON documents (marks, results) are `session_records`', shared with the
Redis adapter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    ExtractionProgress,
    Message,
    RequestMark,
    Role,
    Session,
    SessionCursor,
    SessionKey,
)
from recalld_server.storage.session_records import (
    appended,
    ended,
    extraction_recorded,
    folded,
    marks_from_json,
    marks_to_json,
    results_from_json,
    results_to_json,
)
from recalld_server.storage.sqlite_extraction_queue import SqliteExtractionQueue
from recalld_server.storage.sqlite_file import (
    SESSION_MATCH,
    USER_MATCH,
    SqliteFile,
    session_params,
)

_SESSION_COLUMNS = (
    "tenant_id, user_id, session_id, agent_scope, created_at, updated_at, ended_at, "
    "message_count, token_count, window_token_count, summary, summarized_through, "
    "summary_memory_id, requested_through, extracted_through, last_results, last_error, "
    "recent_requests"
)


def _session_row(session: Session) -> tuple[Any, ...]:
    return (
        *session_params(session.key),
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
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {SESSION_MATCH}", session_params(key)
    ).fetchone()
    return None if row is None else _session_from_row(row)


def _write(connection: sqlite3.Connection, session: Session) -> None:
    connection.execute(
        f"INSERT OR REPLACE INTO sessions ({_SESSION_COLUMNS}) VALUES ({', '.join('?' * 18)})",
        _session_row(session),
    )


def _window(connection: sqlite3.Connection, session: Session) -> list[Message]:
    rows = connection.execute(
        f"SELECT seq, role, content, created_at, token_count FROM messages WHERE {SESSION_MATCH} "
        "AND seq > ? ORDER BY seq",
        (*session_params(session.key), session.summarized_through),
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
                    (
                        *session_params(key),
                        m.seq,
                        int(m.role),
                        m.content,
                        m.created_at,
                        m.token_count,
                    )
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
                f"DELETE FROM messages WHERE {SESSION_MATCH} AND seq <= ?",
                (*session_params(key), through_seq),
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
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {USER_MATCH}"
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
            connection.execute(f"DELETE FROM messages WHERE {SESSION_MATCH}", session_params(key))
            return (
                connection.execute(
                    f"DELETE FROM sessions WHERE {SESSION_MATCH}", session_params(key)
                ).rowcount
                > 0
            )

        return await self._file.transaction(run)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Deletes every session of a user (or of the whole tenant when None)."""
        where, args = (
            ("tenant_id = ?", (tenant_id,))
            if user_id is None
            else (USER_MATCH, (tenant_id, user_id))
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


async def open_sessions(path: Path) -> tuple[SqliteConversations, SqliteExtractionQueue]:
    """Both adapters on one file at `path`; closing both closes it."""
    file = await SqliteFile.open(path)
    return SqliteConversations(file), SqliteExtractionQueue(file)
