"""Switching a store's embedding model: re-embed into a new collection, then swap.

The steps, each safe to interrupt and every one resumable:

1. Create `recalld_memories_<new model>`, or keep the one an earlier run left:
   nothing reads a collection the pointer does not name, so the old collection
   serves (and a server started meanwhile serves it) until the switch.
2. Synchronise the target with the source, in primary-key order and in batches:
   a memory the target lacks, or whose content changed since it was copied, is
   embedded with the new model; one whose other fields changed (status, access
   statistics, tags) is rewritten with the vector it already has; one the source
   no longer holds is removed. Every memory is copied, whatever its status
   (superseded, archived, draft and conflict rows too: History, Restore and
   ResolveConflict need them), and every field but the vector and
   `embedding_model` unchanged: ids, versions (and so etags), timestamps and
   access statistics survive. A resumed run embeds only what is missing or
   changed, so an interrupted copy of a million memories loses one batch.
3. Verify by synchronising again: a pass that finds nothing to do proves both
   collections hold the same memories. A source that keeps changing (writers
   still running) is not switched.
4. Move the pointer (`active_collection.ActivePointer`): one atomic step after
   which every server that starts serves the new collection with the new model.
5. Drop the old collection, unless asked to keep it: a kept copy is stale from
   the first write after the switch and would keep forgotten users' data.

History and idempotency records hold no model vectors and stay where they are.
Servers bind to a collection when they start, so the switch needs the writers
stopped; the copy does not on a Milvus server: `copy_only` synchronises once
while they serve, and the switch that follows (servers stopped) embeds only what
they changed meanwhile. Milvus Lite allows one process per file, so there the
servers are stopped for the whole run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pymilvus import MilvusClient, MilvusException

from recalld_server.domain.core.errors import TextRefusedError
from recalld_server.domain.core.ports import Embedder
from recalld_server.storage.active_collection import (
    ActivePointer,
    MemoryCollection,
    describe_memory_collection,
    memory_collections,
)
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import (
    SCALAR_FIELDS,
    MilvusConfig,
    StoreModelError,
    collection_name_for,
    ensure_collection,
)
from recalld_server.storage.milvus_store import QUERY_LIMIT

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]


class VerificationError(RuntimeError):
    """The copy does not match the source; the pointer was not moved."""


class RefusedMemoryError(RuntimeError):
    """The embedding service refused a memory's content; the pointer was not moved."""


@dataclasses.dataclass(slots=True)
class PassCounts:
    """What one synchronising pass did."""

    embedded: int = 0
    refreshed: int = 0
    removed: int = 0
    unchanged: int = 0

    @property
    def changes(self) -> int:
        """Rows written or removed: zero means the target equals the source."""
        return self.embedded + self.refreshed + self.removed


@dataclasses.dataclass(slots=True)
class ReembedReport:
    """What a switch did (or, with dry_run, would do)."""

    source: MemoryCollection
    target: MemoryCollection
    source_rows: int = 0
    target_rows_before: int = 0
    passes: list[PassCounts] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    switched: bool = False
    dropped_source: bool = False
    dry_run: bool = False
    copy_only: bool = False
    already_serving: bool = False

    @property
    def embedded_rows(self) -> int:
        """Memories embedded with the new model, over all passes."""
        return sum(p.embedded for p in self.passes)

    @property
    def resumed(self) -> bool:
        """An earlier run had left copied rows that this one kept."""
        return self.target_rows_before > 0

    def render(self) -> str:
        """A human summary, one fact per line."""
        if self.already_serving:
            return f"already serving {self.target.model_id} ({self.target.name}); nothing to do"
        lines = [
            f"from: {self.source.model_id} ({self.source.name}, dim {self.source.dimension})",
            f"to:   {self.target.model_id} ({self.target.name}, dim {self.target.dimension})",
            f"rows: {self.source_rows} in the source, {self.target_rows_before} already copied",
        ]
        if self.dry_run:
            lines.append("dry run: nothing changed")
            return "\n".join(lines)
        rate = self.embedded_rows / self.seconds if self.seconds else 0.0
        for number, counts in enumerate(self.passes, 1):
            lines.append(
                f"pass {number}: {counts.embedded} embedded, {counts.refreshed} refreshed, "
                f"{counts.removed} removed, {counts.unchanged} unchanged"
            )
        lines.append(f"embedded: {self.embedded_rows} rows in {self.seconds:.1f} s ({rate:.0f}/s)")
        if self.copy_only:
            lines.append(
                f"copy only: {self.source.name} still serves; stop the servers and run the "
                "same command without --copy-only to catch up and switch"
            )
            return "\n".join(lines)
        lines.append("verified: a last pass found the copy equal to the source")
        lines.append(f"switched: {self.target.name} now serves")
        lines.append(
            f"old collection {self.source.name}: "
            + ("dropped" if self.dropped_source else "kept (stale from the next write; drop it)")
        )
        return "\n".join(lines)


def _count(client: MilvusClient, collection: str) -> int:
    rows = client.query(
        collection, filter="", output_fields=["count(*)"], consistency_level="Strong"
    )
    return int(rows[0]["count(*)"])


def _page(client: MilvusClient, collection: str, after: str, limit: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = client.query(
        collection,
        filter=f"id > {quote(after)}",
        output_fields=SCALAR_FIELDS,
        limit=limit,
        consistency_level="Strong",
    )
    return sorted(rows, key=lambda r: str(r["id"]))


def _copied(
    client: MilvusClient, collection: str, after: str, last: str | None
) -> dict[str, dict[str, Any]]:
    """The target's rows with ids in (after, last] (no upper end: None), vectors included."""
    found: dict[str, dict[str, Any]] = {}
    upper = "" if last is None else f" and id <= {quote(last)}"
    while True:
        rows = client.query(
            collection,
            filter=f"id > {quote(after)}{upper}",
            output_fields=[*SCALAR_FIELDS, "embedding"],
            limit=QUERY_LIMIT,
            consistency_level="Strong",
        )
        found.update((str(r["id"]), r) for r in rows)
        if len(rows) < QUERY_LIMIT:
            return found
        after = max(str(r["id"]) for r in rows)


_COMPARED = [name for name in SCALAR_FIELDS if name != "embedding_model"]


def _same_fields(source: dict[str, Any], copy: dict[str, Any]) -> bool:
    return all(source[name] == copy[name] for name in _COMPARED)


def _target_row(row: dict[str, Any], vector: Sequence[float], model_id: str) -> dict[str, Any]:
    copy = {name: row[name] for name in SCALAR_FIELDS}
    copy["embedding_model"] = model_id
    copy["embedding"] = np.asarray(vector, dtype=np.float32).tolist()
    return copy


async def _sync_pass(
    client: MilvusClient,
    source: str,
    target: MemoryCollection,
    embedder: Embedder,
    batch_size: int,
    on_progress: ProgressFn | None,
    total: int,
) -> PassCounts:
    """Makes the target equal to the source, one page of the source at a time."""
    counts = PassCounts()
    seen = 0
    after = ""
    if on_progress is not None:
        on_progress(0, total)
    while True:
        rows = await asyncio.to_thread(_page, client, source, after, batch_size)
        last = str(rows[-1]["id"]) if rows else None
        copied = await asyncio.to_thread(_copied, client, target.name, after, last)
        fresh = [
            r
            for r in rows
            if (c := copied.get(str(r["id"]))) is None or c["content"] != r["content"]
        ]
        fresh_ids = {str(r["id"]) for r in fresh}
        stale = [
            r
            for r in rows
            if str(r["id"]) not in fresh_ids and not _same_fields(r, copied[str(r["id"])])
        ]
        gone = sorted(set(copied) - {str(r["id"]) for r in rows})
        writes = [
            *(
                _target_row(r, v, target.model_id)
                for r, v in zip(fresh, await _embed(embedder, fresh), strict=True)
            ),
            *(_target_row(r, copied[str(r["id"])]["embedding"], target.model_id) for r in stale),
        ]
        if writes:
            await asyncio.to_thread(client.upsert, target.name, writes)
        if gone:
            await asyncio.to_thread(
                client.delete, target.name, filter=f"id in [{', '.join(quote(i) for i in gone)}]"
            )
        counts.embedded += len(fresh)
        counts.refreshed += len(stale)
        counts.removed += len(gone)
        counts.unchanged += len(rows) - len(fresh) - len(stale)
        if last is None:
            return counts
        seen += len(rows)
        after = last
        if on_progress is not None:
            on_progress(seen, max(total, seen))


async def _embed(embedder: Embedder, rows: Sequence[dict[str, Any]]) -> np.ndarray:
    if not rows:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    try:
        return await embedder.embed([str(r["content"]) for r in rows])
    except TextRefusedError as error:
        row = rows[error.position]
        raise RefusedMemoryError(
            f"the embedding service refused memory {row['id']} of tenant {row['tenant_id']!r} "
            f"({error.description}); edit or forget it, then run again"
        ) from None


MAX_PASSES = 3
"""Synchronising passes before a source that keeps changing is given up on."""


async def reembed(
    client: MilvusClient,
    uri: str,
    token: str,
    embedder: Embedder,
    known_models: Sequence[str],
    *,
    batch_size: int = 512,
    keep_source: bool = False,
    dry_run: bool = False,
    copy_only: bool = False,
    on_progress: ProgressFn | None = None,
) -> ReembedReport:
    """Moves the store's memories into `embedder`'s vector space and switches to it.

    With `copy_only`, one pass brings the target up to date and nothing switches.

    Raises:
        StoreModelError: the store has no memories collection to switch from, or
            the target's name holds another model's vectors.
        VerificationError: the source kept changing; nothing was switched.
        BackendUnavailableError: the embedding endpoint failed; run again to resume.
        RefusedMemoryError: the endpoint refused a memory's content (named in
            the message); nothing was switched.
    """
    pointer = ActivePointer(client, uri)
    source, target = await _source_and_target(client, pointer, embedder, known_models)
    report = ReembedReport(source, target, dry_run=dry_run, copy_only=copy_only)
    if source.model_id == target.model_id:
        report.already_serving = True
        return report
    await _count_rows(client, report)
    if dry_run:
        return report
    await _synchronise(client, uri, token, embedder, report, batch_size, on_progress)
    if copy_only:
        return report
    _verify(report)
    await _switch(client, pointer, report, keep_source)
    return report


async def _source_and_target(
    client: MilvusClient, pointer: ActivePointer, embedder: Embedder, known_models: Sequence[str]
) -> tuple[MemoryCollection, MemoryCollection]:
    """The collection serving now (the pointer's, else the only one) and the one to fill."""
    active = await asyncio.to_thread(pointer.get)
    known = [*known_models, embedder.model_id]
    if active is None:
        existing = await asyncio.to_thread(memory_collections, client, known)
        if len(existing) != 1:
            raise StoreModelError(
                "no serving collection to switch from"
                + (f" (several: {', '.join(c.name for c in existing)})" if existing else "")
                + "; start the server once to create or choose one"
            )
        active = existing[0].name
    source = await asyncio.to_thread(describe_memory_collection, client, active, known)
    target = MemoryCollection(
        collection_name_for(embedder.model_id), embedder.model_id, embedder.dimension
    )
    return source, target


async def _count_rows(client: MilvusClient, report: ReembedReport) -> None:
    """Rows in the source, and in a target an earlier run left (the copy resumes there)."""
    report.source_rows = await asyncio.to_thread(_count, client, report.source.name)
    if await asyncio.to_thread(client.has_collection, report.target.name):
        report.target_rows_before = await asyncio.to_thread(_count, client, report.target.name)


async def _synchronise(
    client: MilvusClient,
    uri: str,
    token: str,
    embedder: Embedder,
    report: ReembedReport,
    batch_size: int,
    on_progress: ProgressFn | None,
) -> None:
    """Creates (or checks) the target, then passes over the source until nothing changes.

    One pass with `copy_only`, else up to MAX_PASSES; only the first reports progress.
    """
    started = time.monotonic()
    target = report.target
    config = MilvusConfig(
        uri=uri, token=token, dimension=target.dimension, model_id=target.model_id
    )
    # Checks a leftover's model and dimension: a mismatch raises StoreModelError.
    await asyncio.to_thread(ensure_collection, config, target.name)
    for _ in range(1 if report.copy_only else MAX_PASSES):
        counts = await _sync_pass(
            client,
            report.source.name,
            target,
            embedder,
            batch_size,
            on_progress if not report.passes else None,
            report.source_rows,
        )
        report.passes.append(counts)
        if counts.changes == 0:
            break
    report.seconds = time.monotonic() - started


def _verify(report: ReembedReport) -> None:
    """Refuses to switch unless the last pass found the copy equal to the source."""
    if report.passes[-1].changes:
        raise VerificationError(
            f"the source kept changing over {MAX_PASSES} passes (are servers still writing "
            f"to it?); still serving {report.source.name}: stop them and run again, which "
            "copies only what changed"
        )


async def _switch(
    client: MilvusClient, pointer: ActivePointer, report: ReembedReport, keep_source: bool
) -> None:
    """Moves the pointer to the copy, then drops the old collection unless it is kept."""
    await asyncio.to_thread(pointer.set, report.target.name)
    report.switched = True
    if not keep_source:
        try:
            await asyncio.to_thread(client.drop_collection, report.source.name)
            report.dropped_source = True
        except MilvusException:
            # The switch has happened; the stale copy only wastes space until dropped.
            log.warning("switched, but could not drop %s", report.source.name, exc_info=True)
