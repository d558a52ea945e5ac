"""Extraction jobs in the SQLite file beside the sessions (the embedded default).

A job is a row of `extraction_jobs` holding its `session_records` JSON, its due
time and its attempts. A claim moves each due job's due time to the end of its
lease in the transaction that selects it, so a job claimed once is not handed out
again until the lease runs out (or it is done).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from recalld_server.domain.core.conversation import ExtractionJob, SessionKey
from recalld_server.storage.session_records import job_from_json, job_to_json
from recalld_server.storage.sqlite_file import (
    SESSION_MATCH,
    USER_MATCH,
    SqliteFile,
    session_params,
)


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
            *session_params(job.key),
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
        args = (*session_params(job.key), job.job_id)

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(
                f"DELETE FROM extraction_jobs WHERE {SESSION_MATCH} AND job_id = ?", args
            )

        await self._file.transaction(run)

    async def delete_session(self, key: SessionKey) -> None:
        """Drops a session's queued jobs."""

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(
                f"DELETE FROM extraction_jobs WHERE {SESSION_MATCH}", session_params(key)
            )

        await self._file.transaction(run)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Drops a user's queued jobs (or the whole tenant's when None)."""
        where, args = (
            ("tenant_id = ?", (tenant_id,))
            if user_id is None
            else (USER_MATCH, (tenant_id, user_id))
        )

        def run(connection: sqlite3.Connection) -> None:
            connection.execute(f"DELETE FROM extraction_jobs WHERE {where}", args)

        await self._file.transaction(run)

    async def close(self) -> None:
        """Releases the file (closed once every adapter on it has closed)."""
        if not self._closed:
            self._closed = True
            await self._file.release()
