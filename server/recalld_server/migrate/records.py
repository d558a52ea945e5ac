"""What every parser produces: records to write, records skipped, and notes.

A `Record` is one memory as read from a source, before any gRPC: the parsers in
this package are pure functions from a file's contents to a `ParseResult`, and
`recalld_server.migrate.importing` turns records into Write calls.

The helpers here (names of types and tiers, time parsing, identifier and tag
cleaning, content splitting) are shared by the parsers and have no side effects.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

from recalld_server.domain.core.model import MemoryType, Status, Tier

MAX_CONTENT_CHARS = 8192
"""The server's content limit; longer records are split into several memories."""
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_TOPIC_KEY_CHARS = 256
MAX_SCOPE_CHARS = 128
MAX_TIMESTAMP_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z
IMPORT_SOURCE = "import"
"""`source` of memories imported from MEMORY.md and SQLite (JSONL keeps its own)."""
PROVENANCE_KEY = "migrated_from"
"""Metadata key under which MEMORY.md and SQLite imports record where a memory came from."""


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One memory read from a source file.

    Attributes:
        content: The text. May exceed MAX_CONTENT_CHARS: the import splits it.
        type: Memory type.
        origin: Where in the source it came from, for reports ("MEMORY.md:12").
        tier: None lets the server choose (P1).
        topic_key: Same key, later record: the server supersedes the earlier one.
        importance: 0..1 or None for the server default.
        confidence: 0..1 or None for the server default.
        source: The memory's `source` field.
        tags: Tags, already within the server's limits for MEMORY.md and SQLite.
        metadata: JSON object.
        occurred_at_ms: When it happened (ms since the epoch); 0 means unknown.
        expire_at_ms: Explicit expiry (ms); 0 means the tier's default.
        agent_scope: Owning agent scope; empty means shared.
        session_id: Conversation it came from.
        user_id: The user named by the source (JSONL only); `--user` overrides it.
        end_status: SUPERSEDED means "no longer current in the source": it must not
            stay active after the import (a later record with the same topic_key
            supersedes it, or else the import archives it). ARCHIVED means it is
            archived after it is written. None leaves the outcome to the server.
    """

    content: str
    type: MemoryType
    origin: str
    tier: Tier | None = None
    topic_key: str = ""
    importance: float | None = None
    confidence: float | None = None
    source: str = ""
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    occurred_at_ms: int = 0
    expire_at_ms: int = 0
    agent_scope: str = ""
    session_id: str = ""
    user_id: str = ""
    end_status: Status | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Skipped:
    """A parsed record that will not be written, and why."""

    origin: str
    reason: str


@dataclasses.dataclass(slots=True)
class ParseResult:
    """A parser's output.

    Every unit the parser recognised as a memory is either in `records` or in
    `skipped`, so `parsed` is what the zero-loss check counts against.
    `notes` are informational (things seen but not memories, guesses made).
    """

    records: list[Record] = dataclasses.field(default_factory=list)
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def parsed(self) -> int:
        """Records recognised in the source: written or skipped, never lost."""
        return len(self.records) + len(self.skipped)

    def extend(self, other: ParseResult) -> None:
        """Appends another result (for sources with several tables)."""
        self.records.extend(other.records)
        self.skipped.extend(other.skipped)
        self.notes.extend(other.notes)


# -- names -------------------------------------------------------------------

_TYPE_NAMES: dict[str, MemoryType] = {
    "fact": MemoryType.FACT,
    "facts": MemoryType.FACT,
    "事实": MemoryType.FACT,
    "preference": MemoryType.PREFERENCE,
    "preferences": MemoryType.PREFERENCE,
    "pref": MemoryType.PREFERENCE,
    "偏好": MemoryType.PREFERENCE,
    "event": MemoryType.EVENT,
    "events": MemoryType.EVENT,
    "事件": MemoryType.EVENT,
    "state": MemoryType.STATE,
    "status": MemoryType.STATE,
    "状态": MemoryType.STATE,
    "decision": MemoryType.DECISION,
    "decisions": MemoryType.DECISION,
    "决策": MemoryType.DECISION,
    "决定": MemoryType.DECISION,
    "task": MemoryType.TASK,
    "tasks": MemoryType.TASK,
    "todo": MemoryType.TASK,
    "任务": MemoryType.TASK,
    "skill": MemoryType.SKILL,
    "skills": MemoryType.SKILL,
    "技能": MemoryType.SKILL,
    "summary": MemoryType.SUMMARY,
    "summaries": MemoryType.SUMMARY,
    "摘要": MemoryType.SUMMARY,
    "总结": MemoryType.SUMMARY,
}


def type_from_name(name: str) -> MemoryType | None:
    """A memory type from a legacy name: "fact", "Preference", "决策", "MEMORY_TYPE_TASK"."""
    key = name.strip().lower().removeprefix("memory_type_")
    if key in _TYPE_NAMES:
        return _TYPE_NAMES[key]
    return None


def tier_from_name(name: str) -> Tier | None:
    """A tier from "P0", "p1" or "MEMORY_TIER_P2"."""
    key = name.strip().upper().removeprefix("MEMORY_TIER_")
    return Tier[key] if key in ("P0", "P1", "P2") else None


# -- times -------------------------------------------------------------------


def parse_time_ms(value: object) -> int | None:
    """Milliseconds since the epoch from a legacy time value, or None.

    Accepts ISO 8601 / SQLite text ("2026-01-15 08:30:00", "2026-01-15T08:30:00Z",
    "2026-01-15", "2026/01/15 08:30"), and numbers (seconds, or milliseconds when
    larger than 10^11). Text without a zone is UTC, which is what SQLite's
    `datetime('now')` and `CURRENT_TIMESTAMP` store.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = str(value).strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            return _parse_iso_ms(text)
    if number != number:  # NaN
        return None
    ms = int(number if abs(number) >= 1e11 else number * 1000)
    return ms if 0 <= ms <= MAX_TIMESTAMP_MS else None


def _parse_iso_ms(text: str) -> int | None:
    candidate = text.replace("/", "-")
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(candidate)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    ms = int(parsed.timestamp() * 1000)
    return ms if 0 <= ms <= MAX_TIMESTAMP_MS else None


# -- identifiers, tags, content -----------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_SPACES = re.compile(r"\s+")


def clean_identifier(value: str, max_chars: int) -> str:
    """Makes a string acceptable as topic_key, scope, session or tag.

    Control characters become spaces, runs of whitespace collapse, surrounding
    whitespace goes, and the result is cut to `max_chars`.
    """
    text = _SPACES.sub(" ", _CONTROL.sub(" ", value)).strip()
    return text[:max_chars].strip()


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Cleaned, non-empty, de-duplicated tags, at most MAX_TAGS of MAX_TAG_CHARS."""
    out: dict[str, None] = {}
    for tag in tags:
        cleaned = clean_identifier(tag, MAX_TAG_CHARS)
        if cleaned:
            out.setdefault(cleaned, None)
    return tuple(out)[:MAX_TAGS]


_SPLIT_POINTS = (
    re.compile(r"\n\s*\n"),  # paragraphs
    re.compile(r"\n"),  # lines
    re.compile(r"(?<=[。\uff01\uff1f!?\uff1b;])|(?<=\.)\s"),  # sentences (CJK and Latin)
    re.compile(r"\s"),  # words
)


def split_content(text: str, limit: int = MAX_CONTENT_CHARS) -> list[str]:
    """Cuts text into pieces of at most `limit` characters, at natural boundaries.

    Prefers paragraph breaks, then line breaks, then sentence ends (CJK and
    Latin), then whitespace; only a piece with none of these is cut hard. The
    pieces, concatenated with the separators dropped at the cut points, give the
    original text; no piece is blank.
    """
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = -1
        for pattern in _SPLIT_POINTS:
            ends = [m.start() for m in pattern.finditer(window) if 0 < m.start() <= limit]
            if ends:
                cut = ends[-1]
                break
        if cut <= 0:
            cut = limit
        head = rest[:cut].rstrip()
        if head.strip():
            pieces.append(head)
        rest = rest[cut:].lstrip()
    if rest.strip():
        pieces.append(rest)
    return pieces
