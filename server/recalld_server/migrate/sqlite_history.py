"""The history chains of an `agent_memories` table, linked by supersedes_id.

The server supersedes a memory only with one written after it under the same
topic_key, so a chain's rows must share a topic and be written oldest first.
Source tables are hand-made: a row may supersede one that is not imported, two
rows may supersede the same one, ids may loop. Each case is cut or noted here
rather than dropped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from recalld_server.migrate.sqlite_rows import int_or, row_id


@dataclasses.dataclass(frozen=True, slots=True)
class Histories:
    """The rows of a table by id, with the chains their supersedes_id links form."""

    rows: dict[int, dict[str, Any]]
    order: list[int]
    """Row ids in the order to write them: id order, older versions first in a chain."""
    root: dict[int, int]
    """Row id → id of the first row of its chain (itself when it has no predecessor)."""
    linked: frozenset[int]
    """Rows that supersede another row or are superseded by one."""
    dangling: list[int]
    """Rows that supersede a row not in the import: each starts a chain of its own."""
    forks: int
    """Rows superseded by more than one row."""

    def notes(self, table: str) -> list[str]:
        """What the import reports about the table's history."""
        notes = []
        if self.dangling:
            notes.append(
                f"{table}: {len(self.dangling)} row(s) supersede a row that is not in the "
                "import (first: id "
                f"{self.dangling[0]}); they start a history of their own"
            )
        if self.forks:
            notes.append(
                f"{table}: {self.forks} row(s) are superseded by more than one row; "
                "only the newest successor stays active"
            )
        return notes


def trace_histories(rows: list[dict[str, Any]]) -> Histories:
    """Links rows (in id order) by their supersedes_id into chains."""
    by_id = {row_id(r): r for r in rows}
    predecessor = {
        row_id(r): int(r["supersedes_id"])
        for r in rows
        if int_or(r.get("supersedes_id"), None) is not None
        and int(r["supersedes_id"]) in by_id
        and int(r["supersedes_id"]) != row_id(r)
    }
    dangling = [
        row_id(r)
        for r in rows
        if int_or(r.get("supersedes_id"), None) is not None and row_id(r) not in predecessor
    ]
    root: dict[int, int] = {}
    depth: dict[int, int] = {}
    for each in by_id:
        root[each], depth[each] = _chain_root(each, predecessor)
    return Histories(
        rows=by_id,
        order=_chain_order(list(by_id), root, depth),
        root=root,
        linked=frozenset(predecessor) | frozenset(predecessor.values()),
        dangling=dangling,
        forks=_count_forks(predecessor),
    )


def _chain_root(start: int, predecessor: dict[int, int]) -> tuple[int, int]:
    """The first row of a row's history and how far back it is (cycles are cut)."""
    seen = {start}
    current = start
    steps = 0
    while current in predecessor and predecessor[current] not in seen:
        current = predecessor[current]
        seen.add(current)
        steps += 1
    return current, steps


def _chain_order(ids: list[int], root: dict[int, int], depth: dict[int, int]) -> list[int]:
    """Id order, except that within one history older versions come first.

    The slots a history occupies in id order are kept; its rows are re-dealt
    into them by depth, so a successor is never written before its predecessor.
    """
    slots: dict[int, list[int]] = {}
    for position, each in enumerate(ids):
        slots.setdefault(root[each], []).append(position)
    ordered = list(ids)
    for positions in slots.values():
        if len(positions) < 2:
            continue
        members = sorted((ids[p] for p in positions), key=lambda i: (depth[i], i))
        for position, member in zip(positions, members, strict=True):
            ordered[position] = member
    return ordered


def _count_forks(predecessor: dict[int, int]) -> int:
    """Rows that more than one row claims to supersede."""
    counts: dict[int, int] = {}
    for parent in predecessor.values():
        counts[parent] = counts.get(parent, 0) + 1
    return sum(1 for n in counts.values() if n > 1)
