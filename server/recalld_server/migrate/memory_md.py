"""MEMORY.md → records: one memory per bullet or paragraph, tiers and types from headings.

The parser is a pure function of the file's text (see `parse_memory_md`). Its
rules, also in docs/migration.md:

* Headings (`#`..`######`, and setext `===`/`---` underlines) open sections.
  A section's tier and type come from the nearest enclosing heading that names
  one, so `## P0 核心` / `### 偏好` gives P0 preferences.
* Tier words in a heading: an explicit `P0`/`P1`/`P2` wins; otherwise the first
  of: 核心, 永久, Core, Permanent, Critical → P0; 长期, 中期, Long(-term) → P1;
  短期, 临时, Short(-term), Temporary, Temp → P2. Along the heading path the
  nearest explicit `Pn` wins over any tier word (so `## P0 核心` / `### 长期目标`
  stays P0); without one, the nearest tier word. No tier anywhere: the default
  tier (P1 unless told).
* Type words in a heading, most specific first: 决策/决定/Decision(s)/ADR →
  DECISION; 偏好/喜好/习惯/Preference(s)/Likes/Habits → PREFERENCE;
  任务/待办/计划/TODO/Task(s)/Plan(s) → TASK; 技能/经验/教训/方法/流程/Skill(s)/
  Lesson(s)/How-to/Playbook/Tips → SKILL; 事件/经历/日志/时间线/Event(s)/
  History/Timeline/Log → EVENT; 摘要/总结/概要/Summary/Recap → SUMMARY;
  事实/信息/背景/Fact(s)/Profile/About/Background → FACT; 状态/当前/进行中/
  State/Status/Current/Ongoing → STATE. Nothing: FACT (or the default type).
* Inline markers override the heading: `[P0]`, `【P1】`, `(P2)` (also with
  full-width parentheses) anywhere, or a leading `P0:`; a bracketed type word
  such as `[决策]` or `[preference]`. Markers are removed from the content. A
  task-list box (`- [ ]`, `- [x]`) makes a TASK with metadata `done`.
* A bullet (`-`, `*`, `+`, `1.`, `1)`) with its continuation lines is one
  memory. A nested bullet is its own memory, prefixed with its parent's text
  ("项目 A: 用 TypeScript") when the parent is at most 120 characters. A parent
  ending in a colon (ASCII or full-width) that has nested bullets is only a label: it appears in its
  children's content and is not a memory of its own.
* Any other block of lines (paragraph, quote, table, fenced code) up to a blank
  line is one memory. Thematic breaks (`---`) are not text.
* A date at the start of an item (`2026-01-15: …`, `[2026-01-15] …`) or in a
  heading (`## 2026-01-15`) sets occurred_at (UTC).
* HTML comments are counted and skipped (reason "html comment"); an item with
  no text left after removing markers is skipped ("empty content").
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from recalld_server.domain.core.model import MemoryType, Tier
from recalld_server.migrate.records import (
    IMPORT_SOURCE,
    PROVENANCE_KEY,
    ParseResult,
    Record,
    Skipped,
    parse_time_ms,
    type_from_name,
)

FORMAT = "memory_md"
PARENT_PREFIX_MAX_CHARS = 120

_EXPLICIT_TIER = re.compile(r"(?<![A-Za-z0-9])P([012])(?![0-9])", re.IGNORECASE)
_TIER_WORDS: tuple[tuple[Tier, re.Pattern[str]], ...] = (
    (Tier.P0, re.compile(r"核心|永久|\b(?:core|permanent|critical)\b", re.IGNORECASE)),
    (Tier.P1, re.compile(r"长期|中期|\blong(?:[- ]?term)?\b", re.IGNORECASE)),
    (
        Tier.P2,
        re.compile(r"短期|临时|\b(?:short(?:[- ]?term)?|temporary|temp)\b", re.IGNORECASE),
    ),
)
_TYPE_WORDS: tuple[tuple[MemoryType, re.Pattern[str]], ...] = (
    (MemoryType.DECISION, re.compile(r"决策|决定|\b(?:decisions?|adrs?)\b", re.IGNORECASE)),
    (
        MemoryType.PREFERENCE,
        re.compile(r"偏好|喜好|习惯|\b(?:preferences?|likes|habits?)\b", re.IGNORECASE),
    ),
    (
        MemoryType.TASK,
        re.compile(r"任务|待办|计划|\b(?:todos?|to-dos?|tasks?|plans?)\b", re.IGNORECASE),
    ),
    (
        MemoryType.SKILL,
        re.compile(
            r"技能|经验|教训|方法|流程|\b(?:skills?|lessons?|how[- ]?tos?|playbooks?|tips)\b",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryType.EVENT,
        re.compile(r"事件|经历|日志|时间线|\b(?:events?|history|timeline|logs?)\b", re.IGNORECASE),
    ),
    (MemoryType.SUMMARY, re.compile(r"摘要|总结|概要|\b(?:summary|summaries|recap)\b", re.I)),
    (
        MemoryType.FACT,
        re.compile(r"事实|信息|背景|\b(?:facts?|profile|about|background)\b", re.IGNORECASE),
    ),
    (
        MemoryType.STATE,
        re.compile(r"状态|当前|进行中|\b(?:state|status|current|ongoing)\b", re.IGNORECASE),
    ),
)

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_BULLET = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_CHECKBOX = re.compile(r"^\[([ xX])\][ \t]+")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
# \uff08 \uff09 \uff1a \uff0c are the full-width ( ) : , of Chinese text.
_INLINE_TIER = re.compile(r"[ \t]*[\[【(\uff08]\s*P([012])\s*[\]】)\uff09][ \t]*")
_LEADING_TIER = re.compile(r"^P([012])\s*[:\uff1a]\s*")
_INLINE_TYPE = re.compile(r"[ \t]*[\[【]\s*([A-Za-z]+|[\u4e00-\u9fff]{2})\s*[\]】](?!\()[ \t]*")
_LEADING_DATE = re.compile(
    r"^\[?(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?)\]?"
    r"(?=$|[\s:\uff1a\-—,\uff0c)\uff09\]])"
)
_COLONS = ":\uff1a"
_HEADING_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")
_HTML_COMMENT_START = "<!--"
_HTML_COMMENT_END = "-->"


def tier_from_heading(text: str) -> Tier | None:
    """The tier a heading names: an explicit P0/P1/P2 first, else the first tier word."""
    explicit = _EXPLICIT_TIER.search(text)
    if explicit:
        return Tier[f"P{explicit.group(1)}"]
    best: tuple[int, Tier] | None = None
    for tier, pattern in _TIER_WORDS:
        match = pattern.search(text)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), tier)
    return best[1] if best else None


def type_from_heading(text: str) -> MemoryType | None:
    """The memory type a heading suggests (most specific word wins), or None."""
    for memory_type, pattern in _TYPE_WORDS:
        if pattern.search(text):
            return memory_type
    return None


@dataclasses.dataclass(slots=True)
class _Heading:
    level: int
    text: str
    tier: Tier | None
    explicit_tier: bool
    type: MemoryType | None
    occurred_at_ms: int


@dataclasses.dataclass(slots=True)
class _Item:
    """A bullet or paragraph being collected."""

    kind: str  # "bullet" | "block"
    line: int
    lines: list[str]
    indent: int = 0  # bullets: column of the marker
    content_indent: int = 0  # bullets: column where the text starts
    parent: _Item | None = None
    has_children: bool = False
    checkbox: bool | None = None  # None: no task box; else whether it is ticked
    text: str = ""  # final text, set when the item closes
    sections: tuple[_Heading, ...] = ()


@dataclasses.dataclass(slots=True)
class _Options:
    source_name: str
    default_tier: Tier | None
    default_type: MemoryType
    agent_scope: str
    tags: tuple[str, ...]


def parse_memory_md(
    text: str,
    *,
    source_name: str = "MEMORY.md",
    default_tier: Tier | None = Tier.P1,
    default_type: MemoryType = MemoryType.FACT,
    agent_scope: str = "",
    tags: tuple[str, ...] = (),
) -> ParseResult:
    """Parses a MEMORY.md file into records (see the module docstring for the rules).

    Args:
        text: The file's contents.
        source_name: File name for origins ("MEMORY.md:12") and provenance metadata.
        default_tier: Tier when no heading or marker names one (None: server default).
        default_type: Type when no heading or marker suggests one.
        agent_scope: agent_scope of every record.
        tags: Tags added to every record (already cleaned).

    Returns:
        Records in document order (parents before their nested bullets), skipped
        items with reasons, and notes.
    """
    options = _Options(source_name, default_tier, default_type, agent_scope, tags)
    parser = _Parser(options)
    parser.feed(text.splitlines())
    return parser.result


class _Parser:
    def __init__(self, options: _Options) -> None:
        self.options = options
        self.result = ParseResult()
        self.headings: list[_Heading] = []
        self.items: list[_Item] = []  # every closed item, in document order
        self.bullets: list[_Item] = []  # open bullet stack
        self.block: _Item | None = None  # open paragraph
        self.blank_before = True

    # -- line loop --------------------------------------------------------------

    def feed(self, lines: list[str]) -> None:
        i = self._front_matter(lines)
        while i < len(lines):
            line = lines[i].rstrip("\r")
            number = i + 1
            if _FENCE.match(line):
                i = self._fenced(lines, i)
                self.blank_before = False
                continue
            if line.lstrip().startswith(_HTML_COMMENT_START):
                i = self._comment(lines, i)
                continue
            if not line.strip():
                self._blank()
                i += 1
                continue
            setext = _SETEXT.match(line)
            if setext and self.block is not None and len(self.block.lines) == 1:
                heading_text = self.block.lines[0].strip()
                self.block = None
                self._heading(1 if setext.group(1).startswith("=") else 2, heading_text)
            elif _THEMATIC.match(line):
                self._close_all()
            elif heading := _HEADING.match(line):
                self._heading(len(heading.group(1)), heading.group(2) or "")
            elif bullet := _BULLET.match(line):
                self._bullet(number, bullet)
            else:
                self._text(number, line)
            self.blank_before = False
            i += 1
        self._close_all()
        self._emit()

    def _front_matter(self, lines: list[str]) -> int:
        """Skips (and reports) a YAML front matter block; returns the first line to parse."""
        if not lines or lines[0].strip() != "---":
            return 0
        for end in range(1, len(lines)):
            if lines[end].strip() in ("---", "..."):
                self.result.skipped.append(Skipped(self._origin(1), "front matter"))
                return end + 1
        return 0

    def _fenced(self, lines: list[str], start: int) -> int:
        fence = _FENCE.match(lines[start])
        assert fence is not None
        marker = fence.group(1)
        end = start + 1
        while end < len(lines) and not lines[end].strip().startswith(marker[0] * len(marker)):
            end += 1
        block = [line.rstrip("\r") for line in lines[start : min(end + 1, len(lines))]]
        indent = len(lines[start].expandtabs(4)) - len(lines[start].expandtabs(4).lstrip())
        target = next((b for b in reversed(self.bullets) if indent >= b.content_indent), None)
        if target is not None:
            target.lines.extend(block)
        else:
            self._close_block()
            self._close_bullets()
            self.block = _Item("block", start + 1, block, sections=tuple(self.headings))
            self._close_block()
        return end + 1

    def _comment(self, lines: list[str], start: int) -> int:
        end = start
        while end < len(lines) and _HTML_COMMENT_END not in lines[end]:
            end += 1
        self.result.skipped.append(Skipped(self._origin(start + 1), "html comment"))
        return end + 1

    def _blank(self) -> None:
        self._close_block()
        self.blank_before = True

    def _heading(self, level: int, text: str) -> None:
        self._close_all()
        while self.headings and self.headings[-1].level >= level:
            self.headings.pop()
        text = text.strip()
        date = _HEADING_DATE.search(text)
        self.headings.append(
            _Heading(
                level=level,
                text=text,
                tier=tier_from_heading(text),
                explicit_tier=_EXPLICIT_TIER.search(text) is not None,
                type=type_from_heading(text),
                occurred_at_ms=(parse_time_ms(date.group(1)) or 0) if date else 0,
            )
        )

    def _bullet(self, number: int, match: re.Match[str]) -> None:
        self._close_block()
        indent = len(match.group(1).expandtabs(4))
        body = match.group(3) or ""
        content_indent = indent + len(match.group(2)) + 1
        while self.bullets and self.bullets[-1].indent >= indent:
            self._close_bullet(self.bullets.pop())
        parent = self.bullets[-1] if self.bullets else None
        checkbox: bool | None = None
        box = _CHECKBOX.match(body)
        if box:
            checkbox = box.group(1) in "xX"
            body = body[box.end() :]
        item = _Item(
            "bullet",
            number,
            [body],
            indent=indent,
            content_indent=content_indent,
            parent=parent,
            checkbox=checkbox,
            sections=tuple(self.headings),
        )
        if parent is not None:
            parent.has_children = True
        self.bullets.append(item)

    def _text(self, number: int, line: str) -> None:
        indent = len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())
        target = self._continuation_target(indent)
        if target is not None:
            target.lines.append(line.strip())
            return
        self._close_bullets()
        stripped = line.strip()
        if stripped.startswith(">"):
            stripped = stripped.lstrip(">").strip()
        if self.block is None:
            self.block = _Item("block", number, [], sections=tuple(self.headings))
        self.block.lines.append(stripped)

    def _continuation_target(self, indent: int) -> _Item | None:
        """The open bullet a non-bullet line belongs to, if any."""
        if not self.bullets:
            return None
        if not self.blank_before:
            return self.bullets[-1]
        for bullet in reversed(self.bullets):
            if indent >= bullet.content_indent:
                return bullet
        return None

    # -- closing ----------------------------------------------------------------

    def _close_block(self) -> None:
        if self.block is not None:
            self.block.text = "\n".join(self.block.lines).strip()
            self.items.append(self.block)
            self.block = None

    def _close_bullet(self, item: _Item) -> None:
        item.text = "\n".join(item.lines).strip()
        self.items.append(item)

    def _close_bullets(self) -> None:
        while self.bullets:
            self._close_bullet(self.bullets.pop())

    def _close_all(self) -> None:
        self._close_block()
        self._close_bullets()

    # -- records ----------------------------------------------------------------

    def _emit(self) -> None:
        # Items were closed children-first; report them in document order.
        for item in sorted(self.items, key=lambda it: it.line):
            if item.kind == "bullet" and item.has_children and _is_label(item.text):
                continue
            self._emit_item(item)

    def _emit_item(self, item: _Item) -> None:
        origin = self._origin(item.line)
        text, tier, marked_type = _strip_markers(item.text)
        if not text:
            self.result.skipped.append(Skipped(origin, "empty content"))
            return
        memory_type = marked_type
        if memory_type is None and item.checkbox is not None:
            memory_type = MemoryType.TASK
        heading_tier = _section_tier(item.sections)
        heading_type = next((h.type for h in reversed(item.sections) if h.type), None)
        memory_type = memory_type or heading_type or self.options.default_type
        tier = tier or heading_tier or self.options.default_tier
        occurred = _leading_date_ms(text) or next(
            (h.occurred_at_ms for h in reversed(item.sections) if h.occurred_at_ms), 0
        )
        provenance: dict[str, Any] = {
            "format": FORMAT,
            "file": self.options.source_name,
            "line": item.line,
        }
        section = " / ".join(h.text for h in item.sections if h.text)
        if section:
            provenance["section"] = section
        parent_text = _parent_text(item)
        if parent_text:
            provenance["parent"] = parent_text
            if len(parent_text) <= PARENT_PREFIX_MAX_CHARS:
                text = f"{parent_text.rstrip(_COLONS).rstrip()}: {text}"
        metadata: dict[str, Any] = {PROVENANCE_KEY: provenance}
        if item.checkbox is not None:
            metadata["done"] = item.checkbox
        self.result.records.append(
            Record(
                content=text,
                type=memory_type,
                origin=origin,
                tier=tier,
                source=IMPORT_SOURCE,
                tags=self.options.tags,
                metadata=metadata,
                occurred_at_ms=occurred,
                agent_scope=self.options.agent_scope,
            )
        )

    def _origin(self, line: int) -> str:
        return f"{self.options.source_name}:{line}"


def _section_tier(sections: tuple[_Heading, ...]) -> Tier | None:
    """The nearest explicit P0/P1/P2 of the heading path, else the nearest tier word."""
    explicit = next((h.tier for h in reversed(sections) if h.tier and h.explicit_tier), None)
    return explicit or next((h.tier for h in reversed(sections) if h.tier), None)


def _is_label(text: str) -> bool:
    stripped, _, _ = _strip_markers(text)
    return stripped.endswith(tuple(_COLONS))


def _parent_text(item: _Item) -> str:
    """The parent's text with its own ancestors' context, markers removed."""
    parts: list[str] = []
    parent = item.parent
    while parent is not None:
        text, _, _ = _strip_markers(parent.text or "\n".join(parent.lines).strip())
        if text:
            parts.append(text.rstrip(_COLONS).rstrip())
        parent = parent.parent
    return ": ".join(reversed(parts))


def _strip_markers(text: str) -> tuple[str, Tier | None, MemoryType | None]:
    """Removes tier and type markers; returns the text and what they named."""
    tier: Tier | None = None
    leading = _LEADING_TIER.match(text)
    if leading:
        tier = Tier[f"P{leading.group(1)}"]
        text = text[leading.end() :]
    inline = _INLINE_TIER.search(text)
    if inline:
        tier = tier or Tier[f"P{inline.group(1)}"]
        text = _INLINE_TIER.sub(" ", text)
    memory_type: MemoryType | None = None

    def type_marker(match: re.Match[str]) -> str:
        nonlocal memory_type
        named = type_from_name(match.group(1))
        if named is None:
            return match.group(0)
        memory_type = memory_type or named
        return " "

    text = _INLINE_TYPE.sub(type_marker, text)
    return text.strip(), tier, memory_type


def _leading_date_ms(text: str) -> int:
    match = _LEADING_DATE.match(text)
    if not match:
        return 0
    return parse_time_ms(match.group(1)) or 0
