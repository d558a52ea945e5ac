"""JSONL: export lines read back as records; hand-written lines; bad lines skipped."""

from __future__ import annotations

import json

from recalld.v1 import memory_pb2
from recalld_server.domain.core.model import DAY_MS, MemoryType, Status, Tier
from recalld_server.migrate.import_plan import record_to_memory
from recalld_server.migrate.jsonl import expiry_to_send, memory_to_line, parse_jsonl

NOW = 1_790_000_000_000


def exported(**fields: object) -> memory_pb2.Memory:
    memory = memory_pb2.Memory(
        id="01JZZZZZZZZZZZZZZZZZZZZZZZ",
        user_id="alice",
        content="爱丽丝喜欢美式咖啡",
        type=memory_pb2.MEMORY_TYPE_PREFERENCE,
        tier=memory_pb2.MEMORY_TIER_P0,
        status=memory_pb2.MEMORY_STATUS_ACTIVE,
        topic_key="drink.coffee",
        importance=0.75,
        confidence=0.9,
        source="chat",
        tags=["drinks", "早上"],
        agent_scope="barista",
        session_id="s-1",
        version=3,
    )
    memory.metadata.update({"k": [1, "x", {"n": None}], "nested": {"ok": True}})
    memory.created_at.FromMilliseconds(NOW - 10 * DAY_MS)
    memory.occurred_at.FromMilliseconds(NOW - 20 * DAY_MS + 123)
    for name, value in fields.items():
        if name.endswith("_at"):
            getattr(memory, name).FromMilliseconds(int(str(value)))
        else:
            setattr(memory, name, value)
    return memory


def test_export_line_round_trips_the_writable_fields() -> None:
    original = exported(expire_at=NOW + 5 * DAY_MS + 7)  # explicit: not whole days
    line = memory_to_line(original)
    assert "\n" not in line
    assert '"topic_key":"drink.coffee"' in line
    assert "爱丽丝" in line  # written as is, not \u-escaped
    result = parse_jsonl([line, ""], source_name="x.jsonl", now_ms=NOW)
    assert result.parsed == 1
    record = result.records[0]
    assert record.origin == "x.jsonl:1"
    assert (record.user_id, record.type, record.tier, record.end_status) == (
        "alice",
        MemoryType.PREFERENCE,
        Tier.P0,
        None,
    )
    rewritten = record_to_memory(record)
    for name in (
        "content",
        "type",
        "tier",
        "topic_key",
        "importance",
        "confidence",
        "source",
        "tags",
        "metadata",
        "occurred_at",
        "expire_at",
        "agent_scope",
        "session_id",
    ):
        assert getattr(rewritten, name) == getattr(original, name), name
    assert not rewritten.id and not rewritten.version  # output-only fields are not sent


def test_statuses_become_end_statuses() -> None:
    lines = [
        memory_to_line(exported(status=memory_pb2.MEMORY_STATUS_SUPERSEDED)),
        memory_to_line(exported(status=memory_pb2.MEMORY_STATUS_ARCHIVED)),
        memory_to_line(exported(status=memory_pb2.MEMORY_STATUS_DRAFT)),
        memory_to_line(exported(status=memory_pb2.MEMORY_STATUS_CONFLICT)),
    ]
    statuses = [r.end_status for r in parse_jsonl(lines).records]
    assert statuses == [Status.SUPERSEDED, Status.ARCHIVED, None, None]


def test_tier_expiry_is_dropped_while_ahead_and_explicit_expiry_kept() -> None:
    created = NOW - 10 * DAY_MS
    sliding = exported(expire_at=created + 90 * DAY_MS)
    assert expiry_to_send(sliding, NOW) == 0
    used = exported(last_accessed_at=NOW - DAY_MS, expire_at=NOW + 29 * DAY_MS)
    assert expiry_to_send(used, NOW) == 0
    explicit = exported(expire_at=NOW + 12_345)
    assert expiry_to_send(explicit, NOW) == NOW + 12_345
    passed = exported(expire_at=created + 5 * DAY_MS)
    assert expiry_to_send(passed, NOW) == created + 5 * DAY_MS  # stays expired
    assert expiry_to_send(exported(), NOW) == 0
    line = memory_to_line(explicit)
    assert parse_jsonl([line], now_ms=NOW, keep_expiry=False).records[0].expire_at_ms == 0


def test_hand_written_lines_and_bad_lines() -> None:
    lines = [
        json.dumps({"content": "likes tea", "type": "preference", "tier": "P2"}),
        json.dumps(
            {"content": "决定用 Go", "type": "决策", "status": "archived", "topicKey": "lang"}
        ),
        json.dumps({"content": "no type at all"}),
        "",
        "{not json",
        "[1, 2]",
        json.dumps({"content": "   "}),
        json.dumps({"content": "x", "type": "MEMORY_TYPE_NOPE"}),
        json.dumps({"content": "x", "tier": 9}),
        json.dumps({"content": "x", "occurred_at": "yesterday"}),
        json.dumps({"content": "extra fields are fine", "future_field": 1}),
    ]
    result = parse_jsonl(lines, source_name="h.jsonl")
    got = [(r.content, r.type, r.tier, r.end_status, r.topic_key) for r in result.records]
    assert got == [
        ("likes tea", MemoryType.PREFERENCE, Tier.P2, None, ""),
        ("决定用 Go", MemoryType.DECISION, None, Status.ARCHIVED, "lang"),
        ("no type at all", MemoryType.FACT, None, None, ""),
        ("extra fields are fine", MemoryType.FACT, None, None, ""),
    ]
    reasons = {s.origin: s.reason for s in result.skipped}
    assert set(reasons) == {
        "h.jsonl:5",
        "h.jsonl:6",
        "h.jsonl:7",
        "h.jsonl:8",
        "h.jsonl:9",
        "h.jsonl:10",
    }
    assert reasons["h.jsonl:5"].startswith("invalid JSON")
    assert reasons["h.jsonl:6"] == "not a JSON object"
    assert reasons["h.jsonl:7"] == "empty content"
    assert "MEMORY_TYPE_NOPE" in reasons["h.jsonl:8"]
    assert "Tier" in reasons["h.jsonl:9"]
    assert reasons["h.jsonl:10"].startswith("not a valid Memory")
    assert result.parsed == 10  # the blank line is not a record
