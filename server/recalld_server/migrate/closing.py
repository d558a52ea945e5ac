"""What was not current in the source is not active after the import.

The server only knows what it is sent; a source's archived rows and the rows it
had closed without a successor the server would recognise would otherwise come
back as current memories and be recalled.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from recalld_client import RecalldClient
from recalld_server.domain.core.model import Status
from recalld_server.migrate.batch_writing import Written
from recalld_server.migrate.import_plan import Batch, Plan
from recalld_server.migrate.import_report import ImportReport
from recalld_server.migrate.records import Record

MAX_FORGET_IDS = 1000


class Closer:
    """Makes sure what was not current in the source is not active after the import.

    Records with end_status ARCHIVED are archived (Forget SOFT) right after their
    batch, before later records are written, so a later record with the same
    content is stored anew rather than absorbed as a duplicate, just as it was
    in the source. Records with end_status SUPERSEDED whose topic_key no later
    record of the same user and scope carries are archived the same way; the
    others wait for the end of the import and are archived only if the server
    did not supersede them.

    Only memories this import stored (CREATED, SUPERSEDED) are ever archived: a
    DUPLICATE's id may be a memory that was there, and current, before.
    """

    def __init__(self, records: Sequence[Record], plan: Plan, report: ImportReport) -> None:
        self.records = records
        self.report = report
        self.user_of: dict[int, str] = {}
        last_with_topic: dict[tuple[str, str, str], int] = {}
        for batch in plan.batches:
            for part in batch.parts:
                self.user_of[part.record_index] = batch.user_id
                record = records[part.record_index]
                if record.topic_key:
                    key = (batch.user_id, record.agent_scope, record.topic_key)
                    last_with_topic[key] = part.record_index
        self.expect_successor = {
            index
            for index, user in self.user_of.items()
            if records[index].end_status is Status.SUPERSEDED
            and records[index].topic_key
            and last_with_topic[(user, records[index].agent_scope, records[index].topic_key)]
            != index
        }
        self.current: set[str] = set()
        self.superseded: set[str] = set()
        self.archived: set[str] = set()
        self.deferred: dict[str, str] = {}  # id -> user

    async def after_batch(
        self,
        client: RecalldClient,
        batch: Batch,
        written: dict[int, list[Written]],
        timeout_s: float,
    ) -> None:
        """Archives what the batch stored that the source had archived or closed."""
        indices = list(dict.fromkeys(p.record_index for p in batch.parts))
        for index in indices:
            for item in written.get(index, ()):
                if item.outcome == "SUPERSEDED":
                    self.superseded.add(item.related_id)
                if self.records[index].end_status is None:
                    self.current.add(item.id)
        now: dict[str, Status] = {}
        for index in indices:
            end = self.records[index].end_status
            if end is None:
                continue
            for item in written.get(index, ()):
                if item.outcome not in ("CREATED", "SUPERSEDED") or item.id in self.current:
                    continue
                if end is Status.ARCHIVED or index not in self.expect_successor:
                    now.setdefault(item.id, end)
                else:
                    self.deferred[item.id] = batch.user_id
        await self._archive(client, batch.user_id, now, timeout_s)

    async def finish(self, client: RecalldClient, timeout_s: float) -> None:
        """Archives closed records that no later record superseded."""
        per_user: dict[str, dict[str, Status]] = collections.defaultdict(dict)
        for memory_id, user in self.deferred.items():
            if memory_id not in self.superseded and memory_id not in self.current:
                per_user[user][memory_id] = Status.SUPERSEDED
        for user, ids in per_user.items():
            await self._archive(client, user, ids, timeout_s)

    async def _archive(
        self, client: RecalldClient, user: str, ids: dict[str, Status], timeout_s: float
    ) -> None:
        todo = {i: s for i, s in ids.items() if i not in self.archived}
        id_list = list(todo)
        for start in range(0, len(id_list), MAX_FORGET_IDS):
            await client.forget(user, id_list[start : start + MAX_FORGET_IDS], timeout=timeout_s)
        self.archived.update(id_list)
        self.report.archived_in_source += sum(1 for s in todo.values() if s is Status.ARCHIVED)
        self.report.archived_not_superseded += sum(
            1 for s in todo.values() if s is Status.SUPERSEDED
        )
