"""The SQLite layouts of seeds 000 (agent_memories) and 001 (memories), as the posts create them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recalld_server.domain.core.model import MemoryType, Status, Tier
from recalld_server.migrate.records import PROVENANCE_KEY, Record
from recalld_server.migrate.sqlite_layouts import LayoutError, detect_layouts, parse_sqlite

# Seed 000, verbatim.
AGENT_MEMORIES_DDL = """
CREATE TABLE IF NOT EXISTS agent_memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    memory_type TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata_json TEXT,
    created_at TEXT DEFAULT (datetime('now')),
    valid_to TEXT,
    supersedes_id INTEGER
);
CREATE INDEX IF NOT EXISTS idx_agent_time ON agent_memories(agent_id, memory_type, created_at);
CREATE INDEX IF NOT EXISTS idx_agent_valid ON agent_memories(agent_id, valid_to);
"""

# Seed 001, verbatim (plus the `owner` column its section 5.3 suggests).
KV_DDL = """
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT, summary TEXT,
  created_at DATETIME DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME DEFAULT CURRENT_TIMESTAMP,
  message_count INTEGER DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id INTEGER NOT NULL, role TEXT NOT NULL,
  content TEXT NOT NULL, token_count INTEGER DEFAULT 0,
  created_at DATETIME DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id);
CREATE TABLE IF NOT EXISTS memories (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id INTEGER, category TEXT NOT NULL,
  key TEXT NOT NULL, value TEXT NOT NULL, importance INTEGER DEFAULT 3,
  created_at DATETIME DEFAULT CURRENT_TIMESTAMP,
  last_accessed_at DATETIME DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS idx_memories_category_key ON memories(category, key);
"""


def make_agent_memories(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(AGENT_MEMORIES_DDL)
    rows = [
        # (agent_id, memory_type, content, metadata_json, created_at, valid_to, supersedes_id)
        ("a1", "fact", "先用 MySQL 跑着", None, "2026-01-10 08:00:00", "2026-01-10 11:00:00", None),
        ("a1", "fact", "还是上 PostgreSQL", None, "2026-01-10 11:00:00", "2026-01-11 09:00:00", 1),
        ("a1", "decision", "UI 风格：暗色", '{"by": "pm"}', "2026-01-11 08:00:00", None, None),
        ("a1", "fact", "数据库选型最终确定为 PostgreSQL 16", None, "2026-01-11 09:00:00", None, 2),
        # Closed the way the post does it (UPDATE ... LIKE), no successor link.
        (
            "a1",
            "event",
            "周报改成周五发",
            "not json",
            "2026-01-12 10:00:00",
            "2026-01-13 10:00:00",
            None,
        ),
        ("a2", "summary", "   ", None, "2026-01-12 10:00:00", None, None),
        ("a2", "摘要", "第一周：完成了记忆层", "[1, 2]", "2026-01-14T10:00:00Z", None, None),
        ("a2", "weird", "未知类型的一条", None, "1767225600", None, 99),
    ]
    db.executemany(
        "INSERT INTO agent_memories(agent_id, memory_type, content, metadata_json, created_at,"
        " valid_to, supersedes_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.commit()
    db.close()
    return path


def make_kv(path: Path, *, owner: bool = False) -> Path:
    db = sqlite3.connect(path)
    db.executescript(KV_DDL)
    if owner:
        db.execute("ALTER TABLE memories ADD COLUMN owner TEXT")
    db.execute("INSERT INTO sessions(title, summary) VALUES ('第一次对话', '聊了前端转 AI')")
    db.execute("INSERT INTO sessions(title, summary) VALUES ('second', '')")
    db.executemany(
        "INSERT INTO messages(session_id, role, content) VALUES (1, ?, ?)",
        [("user", "你好"), ("assistant", "好的")],
    )
    rows = [
        (1, "preference", "编程语言偏好", "TypeScript", 5, "2026-01-02 03:04:05"),
        (1, "fact", "项目名称", "recalld", 3, "2026-01-02 03:04:06"),
        (None, "task", "截止日期", "3 月底", 1, "2026-01-03 00:00:00"),
        (None, "event", "截止日期", "延期到 4 月", 4, "2026-01-04 00:00:00"),
        (None, "preference", "编程语言偏好", "Go", 2, "2026-01-05 00:00:00"),
        (2, "fact", "空值", "  ", 3, "2026-01-05 00:00:00"),
        (None, "mood", "心情", "不错", None, None),
    ]
    db.executemany(
        "INSERT INTO memories(session_id, category, key, value, importance, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    if owner:
        db.execute("UPDATE memories SET owner = CASE WHEN id % 2 = 1 THEN 'bot-a' ELSE 'bot-b' END")
    db.commit()
    db.close()
    return path


def by_origin(records: list[Record], origin: str) -> Record:
    return next(r for r in records if r.origin == origin)


def test_agent_memories_history_chains(tmp_path: Path) -> None:
    result = parse_sqlite(make_agent_memories(tmp_path / "a.db"))
    records = result.records
    assert [s.origin for s in result.skipped] == ["agent_memories#6"]
    assert result.parsed == 8
    # The chain 1 -> 2 -> 4 shares one topic, oldest first; 1 and 2 are closed.
    chain = [r for r in records if r.topic_key == "agent_memories/1"]
    assert [r.origin for r in chain] == ["agent_memories#1", "agent_memories#2", "agent_memories#4"]
    assert [r.end_status for r in chain] == [Status.SUPERSEDED, Status.SUPERSEDED, None]
    # Closed without a successor: no topic, still closed (the runner archives it).
    weekly = by_origin(records, "agent_memories#5")
    assert (weekly.topic_key, weekly.end_status, weekly.type) == (
        "",
        Status.SUPERSEDED,
        MemoryType.EVENT,
    )
    assert weekly.metadata["legacy_metadata"] == "not json"
    ui = by_origin(records, "agent_memories#3")
    assert ui.type is MemoryType.DECISION
    assert ui.metadata["by"] == "pm"
    provenance = ui.metadata[PROVENANCE_KEY]
    assert provenance == {
        "format": "sqlite",
        "table": "agent_memories",
        "id": 3,
        "memory_type": "decision",
        "agent_id": "a1",
        "created_at": "2026-01-11 08:00:00",
    }
    assert ui.occurred_at_ms == 1_768_118_400_000  # 2026-01-11T08:00:00Z
    summary = by_origin(records, "agent_memories#7")
    assert summary.type is MemoryType.SUMMARY
    assert summary.metadata["legacy_metadata"] == [1, 2]
    assert summary.occurred_at_ms == 1_768_384_800_000
    odd = by_origin(records, "agent_memories#8")
    assert (odd.type, odd.topic_key, odd.occurred_at_ms) == (MemoryType.FACT, "", 1_767_225_600_000)
    assert odd.metadata[PROVENANCE_KEY]["memory_type"] == "weird"
    assert all(r.tier is Tier.P1 and r.agent_scope == "" for r in records)
    assert any("2 agent_id values" in n for n in result.notes)
    assert any("not in the import" in n for n in result.notes)  # supersedes_id 99


def test_agent_filter_and_scope(tmp_path: Path) -> None:
    result = parse_sqlite(
        make_agent_memories(tmp_path / "a.db"),
        agent_ids=["a2"],
        scope_from_agent=True,
        default_tier=Tier.P2,
    )
    assert {r.agent_scope for r in result.records} == {"a2"}
    assert {r.tier for r in result.records} == {Tier.P2}
    assert result.parsed == 3


def test_successor_with_smaller_id_is_still_written_after_its_predecessor(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    db = sqlite3.connect(path)
    db.executescript(AGENT_MEMORIES_DDL)
    db.execute(
        "INSERT INTO agent_memories(id, agent_id, memory_type, content, supersedes_id)"
        " VALUES (1, 'a', 'fact', 'new', 5)"
    )
    db.execute(
        "INSERT INTO agent_memories(id, agent_id, memory_type, content, valid_to)"
        " VALUES (5, 'a', 'fact', 'old', '2026-01-01')"
    )
    db.execute(
        "INSERT INTO agent_memories(id, agent_id, memory_type, content)"
        " VALUES (3, 'a', 'fact', 'x')"
    )
    db.commit()
    db.close()
    records = parse_sqlite(path).records
    assert [r.content for r in records] == ["old", "x", "new"]


def test_kv_memories(tmp_path: Path) -> None:
    result = parse_sqlite(make_kv(tmp_path / "kv.db"))
    records = result.records
    assert [s.origin for s in result.skipped] == ["memories#6"]
    assert result.parsed == 7
    first = by_origin(records, "memories#1")
    assert first.content == "编程语言偏好: TypeScript"
    assert (first.type, first.topic_key, first.tags) == (
        MemoryType.PREFERENCE,
        "编程语言偏好",
        ("preference",),
    )
    assert first.importance == 1.0
    assert first.session_id == "1"
    assert first.metadata[PROVENANCE_KEY]["session_title"] == "第一次对话"
    assert by_origin(records, "memories#2").importance == 0.5  # the post's default 3
    assert by_origin(records, "memories#3").importance == 0.0
    # The same key under two categories: prefixed so they do not supersede each other.
    assert by_origin(records, "memories#3").topic_key == "task/截止日期"
    assert by_origin(records, "memories#4").topic_key == "event/截止日期"
    # The same key again later: same topic, written after, so it supersedes.
    later = by_origin(records, "memories#5")
    assert later.topic_key == "编程语言偏好"
    assert records.index(later) > records.index(first)
    mood = by_origin(records, "memories#7")
    assert (mood.type, mood.importance, mood.tags, mood.occurred_at_ms) == (
        MemoryType.FACT,
        None,
        ("mood",),
        0,
    )
    assert any("messages: 2" in n for n in result.notes)
    assert any("--session-summaries" in n for n in result.notes)


def test_kv_session_summaries_and_owner(tmp_path: Path) -> None:
    result = parse_sqlite(
        make_kv(tmp_path / "kv.db", owner=True),
        session_summaries=True,
        agent_ids=["bot-a"],
        scope_from_agent=True,
    )
    summaries = [r for r in result.records if r.type is MemoryType.SUMMARY]
    assert [(r.content, r.session_id) for r in summaries] == [("第一次对话: 聊了前端转 AI", "1")]
    kv = [r for r in result.records if r.origin.startswith("memories#")]
    assert {r.agent_scope for r in kv} == {"bot-a"}
    assert {r.origin for r in kv} == {"memories#1", "memories#3", "memories#5", "memories#7"}


def test_importance_scales(tmp_path: Path) -> None:
    path = tmp_path / "scale.db"
    db = sqlite3.connect(path)
    db.executescript(KV_DDL)
    db.executemany(
        "INSERT INTO memories(category, key, value, importance) VALUES ('fact', ?, 'v', ?)",
        [("a", 1), ("b", 10), ("c", 0.25)],
    )
    db.commit()
    db.close()
    values = [r.importance for r in parse_sqlite(path).records]
    assert values == [0.0, 1.0, 0.0]  # 1..10 scale (0.25 is below its minimum)
    path2 = tmp_path / "unit.db"
    db = sqlite3.connect(path2)
    db.executescript(KV_DDL)
    db.executemany(
        "INSERT INTO memories(category, key, value, importance) VALUES ('fact', ?, 'v', ?)",
        [("a", 0.2), ("b", 0.9), ("c", 1)],
    )
    db.commit()
    db.close()
    assert [r.importance for r in parse_sqlite(path2).records] == [0.2, 0.9, 1.0]


def test_both_layouts_and_errors(tmp_path: Path) -> None:
    path = make_kv(make_agent_memories(tmp_path / "both.db"))
    db = sqlite3.connect(path)
    assert detect_layouts(db) == ["agent_memories", "memories"]
    db.close()
    both = parse_sqlite(path)
    only = parse_sqlite(path, layout="memories")
    assert both.parsed == 15
    assert only.parsed == 7
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    with pytest.raises(LayoutError, match="other"):
        parse_sqlite(empty)
    with pytest.raises(LayoutError, match="no such file"):
        parse_sqlite(tmp_path / "missing.db")
