"""The gRPC side of migration: write parsed records in batches, export users to JSONL.

Import (`run_import`):

1. `plan_batches` (pure) resolves each record's user, splits content over 8192
   characters into several memories, and cuts batches of at most 100 memories,
   starting a new batch whenever a topic_key or a (normalised) content repeats
   inside the current one, so that the server sees every supersede and
   duplicate in file order.
2. Each batch is one Write with a deterministic `request_id` (a hash of the
   source digest, the user, the batch index and the batch's memories), so a
   re-run of the same file is idempotent on a server that honours request_id.
   If the server rejects a batch as INVALID_ARGUMENT, the memories its
   BadRequest names are skipped with the server's reason and the rest of the
   batch is sent again. Any other error stops the import.
3. Records whose end_status is ARCHIVED are archived (Forget SOFT) after
   their batch; records whose end_status is SUPERSEDED are archived too unless
   the server superseded them (see `_Closer`), so that whatever was not current
   in the source is not recalled.

Zero loss: every parsed record ends up written (every part acknowledged by the
server, whatever the outcome) or skipped with a reason; `ImportReport.ok` is
false, and the command exits non-zero, when parsed != written + skipped.

Export (`export_memories`) pages through List with every status, oldest first
per user, and writes one JSONL line per memory (`jsonl.memory_to_line`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.domain.core.model import Status
from recalld_server.domain.core.text import normalise
from recalld_server.migrate.jsonl import memory_to_line
from recalld_server.migrate.records import (
    MAX_CONTENT_CHARS,
    MAX_TOPIC_KEY_CHARS,
    ParseResult,
    Record,
    Skipped,
    split_content,
)

MAX_BATCH = 100
MAX_FORGET_IDS = 1000
OUTCOMES = ("CREATED", "DUPLICATE", "SUPERSEDED", "CONFLICT", "DRAFT")
ALL_STATUSES: tuple[int, ...] = tuple(
    v for v in memory_pb2.MemoryStatus.values() if v != memory_pb2.MEMORY_STATUS_UNSPECIFIED
)
_MEMORY_FIELD = re.compile(r"^memories\[(\d+)\]")


# -- planning (pure) -----------------------------------------------------------


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


# -- import --------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class ImportReport:
    """What an import did, with the zero-loss check.

    Attributes:
        parsed: Records the parser recognised (written + skipped when all is well).
        written: Records whose every part the server acknowledged.
        skipped: Records not written, with the reason (parser, planning or server).
        failed: Records neither written nor skipped (an error stopped the import,
            or only some parts of a split record were written).
        outcomes: Memories written, by WriteOutcome name.
        memories: Memories written (a split record counts once per part).
        split_records: Records split because their content was over the limit.
        archived_in_source: Memories archived after the import because the
            source had them archived.
        archived_not_superseded: Memories archived after the import because the
            source had them closed (superseded) but the server kept them active.
        noteworthy: Memories the server did not simply create: (origin, outcome,
            id, related id), e.g. a DUPLICATE and the memory it was folded into,
            a CONFLICT and the core memory it contradicts.
        error: The error that stopped the import, if any.
        dry_run: Nothing was written.
        notes: The parser's notes.
    """

    parsed: int = 0
    written: int = 0
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    failed: list[Skipped] = dataclasses.field(default_factory=list)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    memories: int = 0
    split_records: int = 0
    archived_in_source: int = 0
    archived_not_superseded: int = 0
    noteworthy: list[tuple[str, str, str, str]] = dataclasses.field(default_factory=list)
    error: str = ""
    dry_run: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when parsed == written + skipped and nothing failed."""
        return (
            not self.error and not self.failed and self.parsed == self.written + len(self.skipped)
        )

    def skip_reasons(self) -> collections.Counter[str]:
        """How many records were skipped per reason."""
        return collections.Counter(s.reason for s in self.skipped)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (for `--report-json`)."""
        return {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "parsed": self.parsed,
            "written": self.written,
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "memories": self.memories,
            "outcomes": {name: self.outcomes.get(name, 0) for name in OUTCOMES},
            "split_records": self.split_records,
            "archived_in_source": self.archived_in_source,
            "archived_not_superseded": self.archived_not_superseded,
            "skip_reasons": dict(self.skip_reasons()),
            "skipped_records": [dataclasses.asdict(s) for s in self.skipped],
            "failed_records": [dataclasses.asdict(s) for s in self.failed],
            "not_created": [
                {"origin": o, "outcome": outcome, "id": i, "related_id": r}
                for o, outcome, i, r in self.noteworthy
            ],
            "error": self.error,
            "notes": self.notes,
        }

    def render(self, max_listed: int = 50) -> str:
        """The human summary the command prints."""
        verb = "would write" if self.dry_run else "written"
        lines = [f"parsed records:  {self.parsed}"]
        split = f" ({self.split_records} split over 8192 chars)" if self.split_records else ""
        lines.append(f"{verb + ' records:':<17}{self.written} as {self.memories} memories{split}")
        if not self.dry_run:
            lines.append(
                "  outcomes: " + ", ".join(f"{n} {self.outcomes.get(n, 0)}" for n in OUTCOMES)
            )
        lines.append(f"skipped records: {len(self.skipped)}")
        for reason, count in sorted(self.skip_reasons().items()):
            lines.append(f"  {count} x {reason}")
        for item in self.skipped[:max_listed]:
            lines.append(f"    {item.origin}: {item.reason}")
        if len(self.skipped) > max_listed:
            lines.append(f"    … and {len(self.skipped) - max_listed} more")
        if self.noteworthy:
            lines.append("written but not created:")
            for origin, outcome, _, related in self.noteworthy[:max_listed]:
                relation = {"SUPERSEDED": "superseding", "CONFLICT": "with core", "DRAFT": ""}.get(
                    outcome, "of"
                )
                lines.append(f"    {origin}: {outcome} {relation} {related}".rstrip())
            if len(self.noteworthy) > max_listed:
                lines.append(f"    … and {len(self.noteworthy) - max_listed} more")
        if self.archived_in_source or self.archived_not_superseded:
            lines.append(
                f"archived after import: {self.archived_in_source} archived in the source, "
                f"{self.archived_not_superseded} closed in the source and not superseded "
                "by the server"
            )
        if self.failed:
            lines.append(f"FAILED records:  {len(self.failed)}")
            for item in self.failed[:max_listed]:
                lines.append(f"    {item.origin}: {item.reason}")
        for note in self.notes:
            lines.append(f"note: {note}")
        if self.error:
            lines.append(f"error: {self.error}")
        balance = f"{self.parsed} parsed = {self.written} written + {len(self.skipped)} skipped"
        if self.ok:
            lines.append(f"check: {balance}: OK")
        else:
            lines.append(
                f"check: FAILED: {self.parsed} parsed != {self.written} written + "
                f"{len(self.skipped)} skipped ({len(self.failed)} unaccounted)"
            )
        return "\n".join(lines)


@dataclasses.dataclass(slots=True)
class _Written:
    record_index: int
    id: str
    outcome: str
    related_id: str


async def run_import(
    client: RecalldClient | None,
    parsed: ParseResult,
    *,
    user_id: str = "",
    source_digest: str = "",
    batch_size: int = MAX_BATCH,
    dry_run: bool = False,
    timeout_s: float = 60.0,
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Writes parsed records and returns the report (it never raises for RPC errors).

    Args:
        client: A connected client; may be None for a dry run.
        parsed: The parser's output.
        user_id: Import every record into this user (else each record's user_id).
        source_digest: Hash of the source file, part of every request_id.
        batch_size: Memories per Write, 1..100.
        dry_run: Plan and count only.
        timeout_s: Deadline of each Write.
        on_progress: Called as (memories done, memories planned) after each Write.
    """
    records = parsed.records
    report = ImportReport(
        parsed=parsed.parsed,
        skipped=list(parsed.skipped),
        dry_run=dry_run,
        notes=list(parsed.notes),
    )
    plan = plan_batches(records, user_id=user_id, batch_size=batch_size)
    report.split_records = sum(1 for n in plan.parts_per_record.values() if n > 1)
    for index, reason in plan.skipped.items():
        report.skipped.append(Skipped(records[index].origin, reason))
    if dry_run or client is None:
        report.dry_run = True
        report.written = len(plan.parts_per_record)
        report.memories = plan.memories
        return report

    written: dict[int, list[_Written]] = collections.defaultdict(list)
    rejected: dict[int, list[str]] = collections.defaultdict(list)
    closer = _Closer(records, plan, report)
    done = 0
    for batch in plan.batches:
        try:
            done += await _write_batch(
                client, batch, source_digest, timeout_s, written, rejected, report
            )
            await closer.after_batch(client, batch, written, timeout_s)
        except RecalldError as error:
            report.error = f"batch {batch.index} for user {batch.user_id!r}: {error}"
            break
        if on_progress is not None:
            on_progress(done, plan.memories)
    if not report.error:
        try:
            await closer.finish(client, timeout_s)
        except RecalldError as error:
            report.error = f"archiving after the import: {error}"

    for index, total in plan.parts_per_record.items():
        got = len(written.get(index, ()))
        origin = records[index].origin
        if got == total:
            report.written += 1
        elif got == 0 and rejected.get(index):
            report.skipped.append(Skipped(origin, "; ".join(dict.fromkeys(rejected[index]))))
        elif got:
            report.failed.append(Skipped(origin, f"only {got} of {total} parts written"))
        else:
            report.failed.append(Skipped(origin, "not written (the import stopped)"))
    return report


async def _write_batch(
    client: RecalldClient,
    batch: Batch,
    source_digest: str,
    timeout_s: float,
    written: dict[int, list[_Written]],
    rejected: dict[int, list[str]],
    report: ImportReport,
) -> int:
    """Writes one batch, dropping memories the server names as invalid; returns parts sent."""
    parts = list(batch.parts)
    handled = 0
    while parts:
        memories = [p.memory for p in parts]
        try:
            response = await client.write(
                batch.user_id,
                memories,
                request_id=request_id_for(source_digest, batch, memories),
                timeout=timeout_s,
            )
        except RecalldError as error:
            bad = _rejected_indices(error, len(parts))
            if bad is None:
                raise
            for position, reasons in bad.items():
                rejected[parts[position].record_index].extend(reasons)
            handled += len(bad)
            parts = [p for i, p in enumerate(parts) if i not in bad]
            continue
        for part, result in zip(parts, response.results, strict=True):
            outcome = memory_service_pb2.WriteOutcome.Name(result.outcome).removeprefix(
                "WRITE_OUTCOME_"
            )
            report.outcomes[outcome] += 1
            report.memories += 1
            if outcome != "CREATED":
                report.noteworthy.append((part.origin, outcome, result.id, result.related_id))
            written[part.record_index].append(
                _Written(part.record_index, result.id, outcome, result.related_id)
            )
        handled += len(parts)
        break
    return handled


def _rejected_indices(error: RecalldError, count: int) -> dict[int, list[str]] | None:
    """Batch positions an INVALID_ARGUMENT names, with reasons; None if it names none."""
    if error.code != grpc.StatusCode.INVALID_ARGUMENT or not error.field_violations:
        return None
    bad: dict[int, list[str]] = {}
    for violation in error.field_violations:
        match = _MEMORY_FIELD.match(violation.field)
        if match is None or int(match.group(1)) >= count:
            return None  # a request-level problem (user_id, request_id): not the data's fault
        field = violation.field[match.end() :].lstrip(".") or "memory"
        bad.setdefault(int(match.group(1)), []).append(
            f"rejected by server: {field} {violation.description}"
        )
    return bad


class _Closer:
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
        written: dict[int, list[_Written]],
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


# -- export --------------------------------------------------------------------


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
