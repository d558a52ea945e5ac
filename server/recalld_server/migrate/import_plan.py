"""What an import will send, decided before any gRPC call.

Kept pure so that the batching rules can be tested without a server: the
server supersedes and folds duplicates only within what it sees, so the cuts
decide whether it sees the source's history in file order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from recalld.v1 import memory_pb2
from recalld_server.domain.core.text import normalise
from recalld_server.migrate.records import (
    MAX_CONTENT_CHARS,
    MAX_TOPIC_KEY_CHARS,
    Record,
    split_content,
)

MAX_BATCH = 100


@dataclasses.dataclass(frozen=True, slots=True)
class Part:
    """One memory to write: a whole record, or one piece of a split record."""

    record_index: int
    memory: memory_pb2.Memory
    origin: str
    """The record's origin, with " part n/N" for a piece of a split record."""


@dataclasses.dataclass(slots=True)
class Batch:
    """At most MAX_BATCH parts for one user; `index` counts batches across the import."""

    user_id: str
    index: int
    parts: list[Part]


@dataclasses.dataclass(slots=True)
class Plan:
    """What an import will send."""

    batches: list[Batch]
    skipped: dict[int, str]
    """Record index → why it is not sent (e.g. no user)."""
    parts_per_record: dict[int, int]

    @property
    def memories(self) -> int:
        """Memories to write (split records count once per part)."""
        return sum(len(b.parts) for b in self.batches)


def record_to_memory(record: Record) -> memory_pb2.Memory:
    """The Memory message for a record (writable fields only)."""
    memory = memory_pb2.Memory(
        content=record.content,
        type=int(record.type),  # type: ignore[arg-type]
        topic_key=record.topic_key,
        source=record.source,
        tags=list(record.tags),
        agent_scope=record.agent_scope,
        session_id=record.session_id,
    )
    if record.tier is not None:
        memory.tier = int(record.tier)  # type: ignore[assignment]
    if record.importance is not None:
        memory.importance = record.importance
    if record.confidence is not None:
        memory.confidence = record.confidence
    if record.metadata:
        memory.metadata.update(dict(record.metadata))
    if record.occurred_at_ms:
        memory.occurred_at.FromMilliseconds(record.occurred_at_ms)
    if record.expire_at_ms:
        memory.expire_at.FromMilliseconds(record.expire_at_ms)
    return memory


def expand_record(record: Record, limit: int = MAX_CONTENT_CHARS) -> list[memory_pb2.Memory]:
    """One memory, or several when the content is over the server's limit.

    Pieces are cut at paragraph, line, sentence or word boundaries. Each piece
    carries metadata `split: {group, part, of}` (group: a hash of the whole
    content) and, when the record has a topic_key, the first piece keeps it and
    piece n gets `<topic_key>#n`, so the pieces do not supersede each other.
    """
    whole = record_to_memory(record)
    pieces = split_content(record.content, limit)
    if len(pieces) == 1:
        return [whole]
    group = hashlib.sha256(record.content.encode("utf-8")).hexdigest()[:16]
    out = []
    for number, piece in enumerate(pieces, start=1):
        memory = memory_pb2.Memory()
        memory.CopyFrom(whole)
        memory.content = piece
        memory.metadata.update({"split": {"group": group, "part": number, "of": len(pieces)}})
        if record.topic_key and number > 1:
            suffix = f"#{number}"
            memory.topic_key = record.topic_key[: MAX_TOPIC_KEY_CHARS - len(suffix)] + suffix
        out.append(memory)
    return out


def plan_batches(
    records: Sequence[Record], *, user_id: str = "", batch_size: int = MAX_BATCH
) -> Plan:
    """Groups records by user (first appearance order) and cuts them into batches.

    Args:
        records: In the order they must be written.
        user_id: Every record goes to this user; empty means each record's own.
        batch_size: At most this many memories per Write (1..100).
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}")
    per_user: dict[str, list[int]] = {}
    skipped: dict[int, str] = {}
    for index, record in enumerate(records):
        user = user_id or record.user_id
        if not user:
            skipped[index] = "no user_id in the record (pass --user)"
            continue
        per_user.setdefault(user, []).append(index)
    batches: list[Batch] = []
    parts_per_record: dict[int, int] = {}
    for user, indices in per_user.items():
        current: list[Part] = []
        topics: set[str] = set()
        contents: set[str] = set()
        for index in indices:
            memories = expand_record(records[index])
            parts_per_record[index] = len(memories)
            for number, memory in enumerate(memories, start=1):
                origin = records[index].origin
                if len(memories) > 1:
                    origin += f" part {number}/{len(memories)}"
                key = normalise(memory.content)
                if current and (
                    len(current) >= batch_size
                    or (memory.topic_key and memory.topic_key in topics)
                    or key in contents
                ):
                    batches.append(Batch(user, len(batches), current))
                    current, topics, contents = [], set(), set()
                current.append(Part(index, memory, origin))
                contents.add(key)
                if memory.topic_key:
                    topics.add(memory.topic_key)
        if current:
            batches.append(Batch(user, len(batches), current))
    return Plan(batches, skipped, parts_per_record)


def request_id_for(source_digest: str, batch: Batch, memories: Sequence[memory_pb2.Memory]) -> str:
    """A deterministic idempotency key for one Write of an import.

    The same file imported into the same user gives the same keys, batch by
    batch; a different file, user, batch position or batch content gives
    another key (so the server never sees one key with two different requests).
    """
    digest = hashlib.sha256()
    for piece in (source_digest, batch.user_id, str(batch.index)):
        digest.update(piece.encode("utf-8"))
        digest.update(b"\0")
    for memory in memories:
        digest.update(memory.SerializeToString(deterministic=True))
        digest.update(b"\0")
    return f"import-{digest.hexdigest()[:40]}"
