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
from collections.abc import Awaitable, Sequence

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
        # A memory and the one it supersedes change together, in one store call (a
        # replace), so a replica killed mid-commit cannot leave a topic with two active
        # memories. New rows tied to no changed row are inserted beside it: a replace
        # costs more per row than an insert (on Milvus Lite about 1 ms against 0.4,
        # besides its cost per call; benchmarks/README.md). History is written after
        # the rows it describes when rows change, and beside them when rows are only added.
        inserts = [row for request in group for row in request.inserts]
        upserts = [row for request in group for row in request.upserts]
        entries = [entry for request in group for entry in request.history]
        history = [self._history.append(entries)] if entries else []
        if not upserts:
            await asyncio.gather(*self._inserting(inserts), *history)
            return
        tied = tied_ids([m for m, _ in inserts], [m for m, _ in upserts])
        together = [row for row in inserts if row[0].id in tied] + upserts
        loose = [row for row in inserts if row[0].id not in tied]
        replacing = self._store.replace(
            [m for m, _ in together], np.stack([v for _, v in together])
        )
        await asyncio.gather(replacing, *self._inserting(loose))
        await asyncio.gather(*history)

    def _inserting(self, rows: list[tuple[Memory, Vector]]) -> list[Awaitable[None]]:
        if not rows:
            return []
        return [self._store.insert([m for m, _ in rows], np.stack([v for _, v in rows]))]


def tied_ids(new: Sequence[Memory], changed: Sequence[Memory]) -> set[str]:
    """Ids of the new memories that a changed one names, or that name a changed one.

    A new memory superseding a stored one, and the stored one marked superseded by it,
    must be stored together.
    """
    changed_ids = {m.id for m in changed}
    named = {m.superseded_by_id for m in changed if m.superseded_by_id}
    return {m.id for m in new if m.id in named or m.supersedes_id in changed_ids}
