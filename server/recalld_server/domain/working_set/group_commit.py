"""Group commit: concurrent requests' storage writes, merged into one call each.

A storage write costs about the same for one row as for a hundred, and an
embedded engine serves one request at a time. So while one group is being
written, the next requests queue; when it returns they go together: one
insert, one upsert, one history append, whatever the tenants. A request is answered only
when the group that carried it is stored (or with the group's error): nothing
is acknowledged before storage has it. No timer: a lone request goes at once.
"""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np

from recalld_server.domain.core.model import HistoryEntry, Memory
from recalld_server.domain.core.ports import HistoryStore, MemoryRows, Vector

MAX_GROUP_ROWS = 2_000
"""Rows one group writes at most; a bigger backlog goes in several groups."""


@dataclasses.dataclass(slots=True)
class _Request:
    inserts: list[tuple[Memory, Vector]]
    upserts: list[tuple[Memory, Vector]]
    history: list[HistoryEntry]
    done: asyncio.Future[None]

    @property
    def rows(self) -> int:
        return len(self.inserts) + len(self.upserts) + len(self.history)


class GroupCommit:
    """Writes rows and history for many concurrent requests together."""

    def __init__(self, store: MemoryRows, history: HistoryStore) -> None:
        self._store = store
        self._history = history
        self._queue: list[_Request] = []
        self._writer: asyncio.Task[None] | None = None
        self.groups = 0
        self.requests = 0

    async def write(
        self,
        inserts: list[tuple[Memory, Vector]],
        upserts: list[tuple[Memory, Vector]],
        history: list[HistoryEntry],
    ) -> None:
        """Stores new and changed rows together, then history; returns once stored."""
        if not (inserts or upserts or history):
            return
        request = _Request(inserts, upserts, history, asyncio.get_running_loop().create_future())
        self._queue.append(request)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        # The caller may be cancelled (deadline); the group is written all the same.
        await asyncio.shield(request.done)

    async def _drain(self) -> None:
        while self._queue:
            group: list[_Request] = []
            rows = 0
            while self._queue and (not group or rows + self._queue[0].rows <= MAX_GROUP_ROWS):
                request = self._queue.pop(0)
                group.append(request)
                rows += request.rows
            try:
                await self._write_group(group)
            except Exception as error:
                for request in group:
                    request.done.set_exception(error)
                    request.done.exception()  # each caller re-raises it; no "never retrieved"
            else:
                for request in group:
                    request.done.set_result(None)
            self.groups += 1
            self.requests += len(group)

    async def _write_group(self, group: list[_Request]) -> None:
        # A group that changes existing rows writes its new rows in the same store
        # call (an upsert): a memory and the one it supersedes change together, so a
        # replica killed mid-commit cannot leave a topic with two active memories.
        # A group that only adds rows inserts them and writes history concurrently.
        inserts = [row for request in group for row in request.inserts]
        upserts = [row for request in group for row in request.upserts]
        entries = [entry for request in group for entry in request.history]
        history = [self._history.append(entries)] if entries else []
        if not upserts:
            inserting = (
                self._store.insert([m for m, _ in inserts], np.stack([v for _, v in inserts]))
                if inserts
                else None
            )
            await asyncio.gather(*(work for work in (inserting, *history) if work is not None))
            return
        rows = [*inserts, *upserts]
        await self._store.replace([m for m, _ in rows], np.stack([v for _, v in rows]))
        await asyncio.gather(*history)
