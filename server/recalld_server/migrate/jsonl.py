"""JSONL: one recalld Memory per line in proto JSON form (what `recalld export` writes).

`memory_to_line` serialises a Memory (every field, output-only ones included,
with proto field names such as `topic_key`, enum names such as
`MEMORY_TYPE_FACT`, RFC 3339 times); `parse_jsonl` reads such lines back into
records.

Reading (pure, no gRPC):

* Both proto field names (`topic_key`) and JSON names (`topicKey`) are
  accepted; unknown fields are ignored (a newer server's export still loads).
* For hand-written files, `type` may also be a short name ("fact", "偏好") and
  `tier` "P0"/"P1"/"P2"; `status` likewise ("superseded"). A missing type is
  FACT.
* The writable fields are kept as they are: content, type, tier, topic_key,
  importance, confidence, source, tags, metadata, occurred_at, agent_scope,
  session_id. Output-only fields (id, created_at, version, …) are assigned
  anew by the server.
* expire_at: an export cannot say whether a caller set it or the tier derived
  it, so the value decides. One that is a whole number of days after the
  memory's created_at, last_accessed_at or updated_at is the tier's sliding
  lifetime: if it is still ahead, it is not sent, and the tier's lifetime
  restarts at the import (sending it would freeze it as an explicit expiry);
  if it has passed, it is sent, so the memory stays expired. Any other value
  was set by a caller and is sent as given. `keep_expiry=False`
  (`--reset-expiry`) sends none.
* `status` SUPERSEDED and ARCHIVED become the record's end_status, so the
  import reproduces them (see `Record.end_status`); DRAFT and CONFLICT are left
  to the server, which decides them again from confidence and P0 contradictions.
* `user_id` is kept, so a multi-user export imports into the same users unless
  the command names one user for all.
* Blank lines are not records; a line that is not a JSON object, or not a valid
  Memory, or has no content, is skipped with the reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format

from recalld.v1 import memory_pb2
from recalld_server.domain.core.model import DAY_MS, MemoryType, Status, Tier
from recalld_server.migrate.records import (
    ParseResult,
    Record,
    Skipped,
    tier_from_name,
    type_from_name,
)

FORMAT = "jsonl"

_STATUS_NAMES = {s.name.lower(): s for s in Status}


def memory_to_dict(memory: memory_pb2.Memory) -> dict[str, Any]:
    """A Memory as a proto-JSON object with proto field names."""
    return json_format.MessageToDict(memory, preserving_proto_field_name=True)


def memory_to_line(memory: memory_pb2.Memory) -> str:
    """One JSONL line (without the newline); non-ASCII text is written as is."""
    return json.dumps(memory_to_dict(memory), ensure_ascii=False, separators=(",", ":"))


def parse_jsonl(
    lines: Iterable[str],
    *,
    source_name: str = "memories.jsonl",
    keep_expiry: bool = True,
    now_ms: int | None = None,
) -> ParseResult:
    """Parses JSONL text (an iterable of lines) into records, in file order.

    Args:
        lines: The file's lines.
        source_name: File name for origins ("export.jsonl:3").
        keep_expiry: Send explicit expire_at values (see the module docstring);
            False sends none, so the tier's lifetime starts at the import.
        now_ms: The time that decides whether a tier expiry has passed
            (default: now).
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    result = ParseResult()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        origin = f"{source_name}:{number}"
        try:
            value = json.loads(line)
        except ValueError as error:
            result.skipped.append(Skipped(origin, f"invalid JSON: {error}"))
            continue
        if not isinstance(value, dict):
            result.skipped.append(Skipped(origin, "not a JSON object"))
            continue
        record = record_from_dict(value, origin, keep_expiry=keep_expiry, now_ms=now)
        if isinstance(record, Skipped):
            result.skipped.append(record)
        else:
            result.records.append(record)
    return result


def record_from_dict(
    value: dict[str, Any], origin: str, *, keep_expiry: bool = True, now_ms: int = 0
) -> Record | Skipped:
    """One JSON object → a record, or the reason it cannot be one."""
    normalised = _normalise_names(value)
    memory = memory_pb2.Memory()
    try:
        json_format.ParseDict(normalised, memory, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        return Skipped(origin, f"not a valid Memory: {error}")
    if not memory.content.strip():
        return Skipped(origin, "empty content")
    for name in ("type", "tier"):
        # ParseDict drops enum names it does not know when ignoring unknown fields.
        raw = normalised.get(name)
        if (
            raw not in (None, 0, "")
            and not getattr(memory, name)
            and not str(raw).endswith("_UNSPECIFIED")
        ):
            return Skipped(origin, f"unknown {name} {raw!r}")
    try:
        memory_type = MemoryType(memory.type) if memory.type else MemoryType.FACT
        tier = Tier(memory.tier) if memory.tier else None
        status = Status(memory.status) if memory.status else None
    except ValueError as error:
        return Skipped(origin, f"unknown enum value: {error}")
    return Record(
        content=memory.content,
        type=memory_type,
        origin=origin,
        tier=tier,
        topic_key=memory.topic_key,
        importance=memory.importance if memory.HasField("importance") else None,
        confidence=memory.confidence if memory.HasField("confidence") else None,
        source=memory.source,
        tags=tuple(memory.tags),
        metadata=json_format.MessageToDict(memory.metadata) if memory.HasField("metadata") else {},
        occurred_at_ms=memory.occurred_at.ToMilliseconds() if memory.HasField("occurred_at") else 0,
        expire_at_ms=expiry_to_send(memory, now_ms) if keep_expiry else 0,
        agent_scope=memory.agent_scope,
        session_id=memory.session_id,
        user_id=memory.user_id,
        end_status=status if status in (Status.SUPERSEDED, Status.ARCHIVED) else None,
    )


def expiry_to_send(memory: memory_pb2.Memory, now_ms: int) -> int:
    """The expire_at to write for an exported memory, 0 for the tier's default."""
    if not memory.HasField("expire_at"):
        return 0
    expire = memory.expire_at.ToMilliseconds()
    if expire <= now_ms:
        return expire
    for name in ("created_at", "last_accessed_at", "updated_at"):
        if memory.HasField(name):
            delta = expire - getattr(memory, name).ToMilliseconds()
            if delta > 0 and delta % DAY_MS == 0:
                return 0
    return expire


def _normalise_names(value: dict[str, Any]) -> dict[str, Any]:
    """Accepts short enum names ("fact", "P0", "archived") for hand-written files."""
    out = dict(value)
    raw_type = out.get("type")
    if isinstance(raw_type, str) and not raw_type.startswith("MEMORY_TYPE_"):
        named = type_from_name(raw_type)
        if named is not None:
            out["type"] = f"MEMORY_TYPE_{named.name}"
    raw_tier = out.get("tier")
    if isinstance(raw_tier, str) and not raw_tier.startswith("MEMORY_TIER_"):
        tier = tier_from_name(raw_tier)
        if tier is not None:
            out["tier"] = f"MEMORY_TIER_{tier.name}"
    raw_status = out.get("status")
    if isinstance(raw_status, str) and not raw_status.startswith("MEMORY_STATUS_"):
        status = _STATUS_NAMES.get(raw_status.strip().lower())
        if status is not None:
            out["status"] = f"MEMORY_STATUS_{status.name}"
    return out
