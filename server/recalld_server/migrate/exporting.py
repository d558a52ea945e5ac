"""Export: every memory of the named users as JSONL, the form `recalld import` reads back.

Pages through List with every status (superseded, archived, drafts too), so
that an export followed by an import reproduces history, not only what is
current; each user's memories come out oldest first (`jsonl.memory_to_line`).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Sequence

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.migrate.jsonl import memory_to_line

ALL_STATUSES: tuple[int, ...] = tuple(
    v for v in memory_pb2.MemoryStatus.values() if v != memory_pb2.MEMORY_STATUS_UNSPECIFIED
)


@dataclasses.dataclass(slots=True)
class ExportReport:
    """What an export wrote."""

    per_user: dict[str, int] = dataclasses.field(default_factory=dict)
    per_status: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    error: str = ""

    @property
    def total(self) -> int:
        """Memories written."""
        return sum(self.per_user.values())

    def render(self) -> str:
        """The human summary the command prints (to stderr)."""
        lines = [f"exported memories: {self.total}"]
        for user, count in self.per_user.items():
            lines.append(f"  user {user}: {count}")
        if self.per_status:
            lines.append(
                "  by status: "
                + ", ".join(f"{name} {count}" for name, count in sorted(self.per_status.items()))
            )
        if self.error:
            lines.append(f"error: {self.error}")
        return "\n".join(lines)


async def list_all(
    client: RecalldClient,
    user_id: str,
    *,
    statuses: Iterable[int] = ALL_STATUSES,
    page_size: int = 500,
    timeout_s: float = 30.0,
) -> list[memory_pb2.Memory]:
    """Every memory of a user with the given statuses, oldest first (by time-ordered id)."""
    by_id: dict[str, memory_pb2.Memory] = {}
    token = ""
    status_list = list(statuses)
    while True:
        page = await client.list(
            user_id, page_size=page_size, page_token=token, statuses=status_list, timeout=timeout_s
        )
        for memory in page.memories:
            by_id.setdefault(memory.id, memory)
        token = page.next_page_token
        if not token:
            break
    return [by_id[i] for i in sorted(by_id)]


async def export_memories(
    client: RecalldClient,
    user_ids: Sequence[str],
    write_line: Callable[[str], object],
    *,
    statuses: Iterable[int] = ALL_STATUSES,
    page_size: int = 500,
    timeout_s: float = 30.0,
    on_progress: Callable[[int, int], None] | None = None,
) -> ExportReport:
    """Writes each user's memories as JSONL lines (oldest first); never raises for RPC errors.

    Args:
        client: A connected client.
        user_ids: The users to export, in this order.
        write_line: Receives each line, newline included.
        statuses: Which statuses to export (default: all of them).
        page_size: List page size (1..500).
        timeout_s: Deadline of each List call.
        on_progress: Called as (users done, users) after each user.
    """
    report = ExportReport()
    status_list = list(statuses)
    for done, user in enumerate(dict.fromkeys(user_ids), start=1):
        try:
            memories = await list_all(
                client, user, statuses=status_list, page_size=page_size, timeout_s=timeout_s
            )
        except RecalldError as error:
            report.error = f"user {user!r}: {error}"
            break
        for memory in memories:
            write_line(memory_to_line(memory) + "\n")
            report.per_status[memory_pb2.MemoryStatus.Name(memory.status)] += 1
        report.per_user[user] = len(memories)
        if on_progress is not None:
            on_progress(done, len(user_ids))
    return report
