"""MEMORY.md parsing: tiers and types from headings and markers, one record per item."""

from __future__ import annotations

import re

from recalld_server.domain.core.model import MemoryType, Tier
from recalld_server.migrate.memory_md import (
    parse_memory_md,
    tier_from_heading,
    type_from_heading,
)
from recalld_server.migrate.records import PROVENANCE_KEY, Record

CHINESE = """\
# MEMORY

## P0 核心记忆

### 偏好
- 用户偏好 TypeScript，不喜欢 Java
- 写作风格：简洁、少用形容词
  不要用感叹号

### 长期目标
- 2026 年内把个人系统迁移到本地优先架构

## 长期记忆

### 决策
- 2026-01-15: 数据库选型最终确定为 PostgreSQL
- 项目 A：
  - 用 TypeScript
  - 截止 3 月底
- [P0] 永远不要在周末发通知

### 待办
- [ ] 给周报 Agent 加记忆层
- [x] 迁移 MEMORY.md

## 短期 / 临时

系统在高并发场景下偶现 OOM，
后来通过限制 worker 数量解决。

<!-- 维护者备注：每周清理 -->

-
- [决策] 临时把日志级别调到 DEBUG
"""

ENGLISH = """\
---
updated: 2026-02-01
---
Core Memory
===========

Preferences
-----------

* Prefers americano, no sugar
* Likes working early in the morning (before 9am)

## Long-term Decisions

1. Use Milvus for vector storage
2) Deploy on Kubernetes (P2)

## Short-term notes

> The staging cluster is down until Friday.

| service | owner |
| ------- | ----- |
| api     | Bob   |

## 2026-03-02 Daily log

- Met with the finance team
  about Q2 budgets.

    continued after a blank line, still the same bullet

Free paragraph under the log heading.

```text
kubectl get pods -n recalld
```

***

## Skills
- P1: How to rotate API keys: edit keys.json, send SIGHUP
"""


def by_content(records: list[Record], fragment: str) -> Record:
    matches = [r for r in records if fragment in r.content]
    assert len(matches) == 1, (fragment, [r.content for r in records])
    return matches[0]


def test_chinese_headings_give_tiers_and_types() -> None:
    result = parse_memory_md(CHINESE, source_name="MEMORY.md")
    records = result.records
    pref = by_content(records, "TypeScript，不喜欢 Java")
    assert (pref.tier, pref.type) == (Tier.P0, MemoryType.PREFERENCE)
    assert pref.origin == "MEMORY.md:6"
    assert pref.metadata[PROVENANCE_KEY]["section"] == "MEMORY / P0 核心记忆 / 偏好"
    # A continuation line belongs to its bullet.
    assert by_content(records, "写作风格").content == "写作风格：简洁、少用形容词\n不要用感叹号"
    # An explicit P0 higher up wins over the tier word 长期 in a sub-heading.
    assert by_content(records, "本地优先").tier is Tier.P0
    decision = by_content(records, "PostgreSQL")
    assert (decision.tier, decision.type) == (Tier.P1, MemoryType.DECISION)
    assert decision.occurred_at_ms == 1_768_435_200_000  # 2026-01-15T00:00:00Z
    # An inline marker overrides the heading and is removed from the content.
    weekend = by_content(records, "周末")
    assert (weekend.content, weekend.tier) == ("永远不要在周末发通知", Tier.P0)
    paragraph = by_content(records, "OOM")
    assert paragraph.tier is Tier.P2
    assert paragraph.content.endswith("后来通过限制 worker 数量解决。")
    debug = by_content(records, "DEBUG")
    assert (debug.content, debug.type, debug.tier) == (
        "临时把日志级别调到 DEBUG",
        MemoryType.DECISION,
        Tier.P2,
    )


def test_nested_bullets_carry_their_label_and_tasks_their_box() -> None:
    records = parse_memory_md(CHINESE).records
    contents = [r.content for r in records]
    assert "项目 A: 用 TypeScript" in contents
    assert "项目 A: 截止 3 月底" in contents
    assert not any(c.startswith("项目 A") and c.endswith(("：", ":")) for c in contents)
    todo = by_content(records, "周报 Agent")
    done = by_content(records, "迁移 MEMORY.md")
    assert (todo.type, todo.metadata["done"]) == (MemoryType.TASK, False)
    assert (done.type, done.metadata["done"]) == (MemoryType.TASK, True)


def test_every_item_is_a_record_or_skipped_with_a_reason() -> None:
    result = parse_memory_md(CHINESE)
    assert len(result.records) == 11
    assert sorted(s.reason for s in result.skipped) == ["empty content", "html comment"]
    assert result.parsed == 13
    # Zero loss: every text line of the file (minus markup) is in some record.
    everything = "\n".join(r.content for r in result.records)
    for line in CHINESE.splitlines():
        text = re.sub(r"^\s*(#+|[-*]|\d+[.)])?\s*(\[[ xP0-9决策]*\])?\s*", "", line).strip()
        if text and not line.lstrip().startswith(("#", "<!--")):
            assert text.rstrip("：") in everything, line


def test_english_setext_headings_markers_blocks_and_dates() -> None:
    result = parse_memory_md(ENGLISH, source_name="notes.md", default_tier=Tier.P1)
    records = result.records
    assert [s.reason for s in result.skipped] == ["front matter"]
    coffee = by_content(records, "americano")
    assert (coffee.tier, coffee.type) == (Tier.P0, MemoryType.PREFERENCE)
    assert by_content(records, "early in the morning").content.endswith("(before 9am)")
    milvus = by_content(records, "Milvus")
    assert (milvus.tier, milvus.type) == (Tier.P1, MemoryType.DECISION)
    kubernetes = by_content(records, "Kubernetes")
    assert (kubernetes.content, kubernetes.tier) == ("Deploy on Kubernetes", Tier.P2)
    staging = by_content(records, "staging")
    assert (staging.content, staging.tier) == ("The staging cluster is down until Friday.", Tier.P2)
    assert by_content(records, "| api").content.count("\n") == 2  # a table is one block
    finance = by_content(records, "finance")
    assert finance.type is MemoryType.EVENT
    assert "continued after a blank line" in finance.content
    assert finance.occurred_at_ms == 1_772_409_600_000  # heading date 2026-03-02
    assert by_content(records, "Free paragraph").type is MemoryType.EVENT
    code = by_content(records, "kubectl")
    assert code.content.startswith("```text")
    skill = by_content(records, "rotate API keys")
    assert (skill.tier, skill.type) == (Tier.P1, MemoryType.SKILL)
    assert skill.content.startswith("How to rotate")
    assert all(r.source == "import" for r in records)
    assert len(records) == 10


def test_defaults_apply_without_headings() -> None:
    result = parse_memory_md(
        "- one\n- two\n\nthree\n",
        default_tier=Tier.P2,
        default_type=MemoryType.STATE,
        agent_scope="planner",
        tags=("legacy",),
    )
    assert [(r.content, r.tier, r.type) for r in result.records] == [
        ("one", Tier.P2, MemoryType.STATE),
        ("two", Tier.P2, MemoryType.STATE),
        ("three", Tier.P2, MemoryType.STATE),
    ]
    assert all(r.agent_scope == "planner" and r.tags == ("legacy",) for r in result.records)


def test_heading_vocabulary() -> None:
    assert tier_from_heading("P0 核心") is Tier.P0
    assert tier_from_heading("Core values") is Tier.P0
    assert tier_from_heading("永久记忆") is Tier.P0
    assert tier_from_heading("长期") is Tier.P1
    assert tier_from_heading("Long-term memory") is Tier.P1
    assert tier_from_heading("临时笔记") is Tier.P2
    assert tier_from_heading("Short term") is Tier.P2
    assert tier_from_heading("Scores") is None  # "core" only as a word
    assert tier_from_heading("核心 (P2)") is Tier.P2  # an explicit Pn wins
    assert type_from_heading("用户偏好") is MemoryType.PREFERENCE
    assert type_from_heading("Decisions") is MemoryType.DECISION
    assert type_from_heading("当前决策") is MemoryType.DECISION  # specific beats "current"
    assert type_from_heading("Lessons learned") is MemoryType.SKILL
    assert type_from_heading("About me") is MemoryType.FACT
    assert type_from_heading("Random") is None
