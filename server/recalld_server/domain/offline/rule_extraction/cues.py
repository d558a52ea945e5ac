"""What every rule shares: confidence, importance, the cues that rule a clause out, dates, rules."""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable, Sequence

from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.offline.rule_extraction.vocabulary import topic_for

CONFIDENT = 0.9
HEDGED = 0.4
IMPORTANCE_CORE = 0.9
"""Allergies and medical conditions: what must never be forgotten."""
IMPORTANCE_PROFILE = 0.6
"""Preferences, facts and decisions."""
IMPORTANCE_TASK = 0.5
"""Tasks and events."""
MAX_CLAUSE_CHARS = 1000
"""Longer clauses are not the short statements the rules are written for."""

HEDGE = re.compile(
    r"可能|也许|大概|好像|似乎|估计|或许|说不定|不确定|不太确定|我觉得|我猜|貌似|应该是"
    r"|\b(?:maybe|perhaps|probably|possibly|might|i think|i guess|i believe|i suppose"
    r"|not sure|i'm not sure|kind of|sort of|i feel like|apparently|presumably)\b",
    re.IGNORECASE,
)
HYPOTHETICAL = re.compile(
    r"如果|要是|假如|假设|万一|若是|倘若|的话|假若"
    r"|\b(?:if|suppose|supposing|imagine|unless|in case|wish|what if)\b",
    re.IGNORECASE,
)
DENIAL = re.compile(
    r"没说|没有说|并没有说|不是说|没讲过"
    r"|\b(?:didn't say|did not say|never said|not saying|i'm not saying|not that i)\b",
    re.IGNORECASE,
)
QUESTION_EN = re.compile(
    r"^(?:do|does|did|am|is|are|was|were|can|could|would|should|will|shall|have|has|may)\s+"
    r"(?:i|you|we|my|it|they|he|she|there|the|this|that)\b"
    r"|^(?:what|where|who|whom|whose|why|how|which)\b",
    re.IGNORECASE,
)
QUESTION_ZH = re.compile(
    r"[吗呢么]$|是不是|有没有|能不能|要不要|会不会|对不对|可不可以|什么|哪|谁|怎么|为什么|为啥|几点|多少"
)
_TAG_QUESTION = re.compile(
    r"^\s*(?:你呢|您呢|那你呢|你觉得呢|你觉得|你看|可以吗|好吗|行吗|好不好|可以不"
    r"|what about you|how about you|and you|can you|could you|would you|will you|do you)",
    re.IGNORECASE,
)
TERMINAL = re.compile(r"[\s。！？；.!?;,，、:：~～…]+$")

_ISO_DATE = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?(?!\d)",
)


def iso_date_ms(text: str) -> int:
    """Ms since the epoch of the first valid ISO date (UTC) in the text, else 0."""
    for match in _ISO_DATE.finditer(text):
        year, month, day, hour, minute = match.groups()
        try:
            moment = datetime.datetime(
                int(year),
                int(month),
                int(day),
                int(hour or 0),
                int(minute or 0),
                tzinfo=datetime.UTC,
            )
        except ValueError:
            continue
        return int(moment.timestamp() * 1000)
    return 0


def statement(sentence: str) -> str | None:
    """The sentence without a trailing tag question, or None if it is a question."""
    text = sentence.strip()
    if not text.endswith(("?", "？")):
        return text
    parts = re.split(r"[,，]", text)
    if len(parts) > 1 and _TAG_QUESTION.match(parts[-1]):
        return text[: len(text) - len(parts[-1]) - 1]
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Found:
    """What a language's rule found in a clause."""

    type: MemoryType
    content: str
    topic: str = ""
    importance: float = IMPORTANCE_PROFILE
    keyword_topic: bool = True
    """Whether to look the topic up in the vocabulary when the rule gave none."""


Matcher = Callable[[str], re.Match[str] | None]
"""Finds a rule's shape in a clause: usually a compiled pattern's `match` (or `search`)."""
Check = Callable[[str, re.Match[str]], bool]
"""A further condition on a clause and what its rule's test found."""
Write = Callable[[str, re.Match[str]], str]
"""The memory's text, from the clause and what its rule's test found."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """One row of a language's rule table: a shape of statement and what it states.

    The rules are data, not a chain of ifs, so that their order (first match wins)
    and what each yields can be read and compared at a glance.
    """

    test: Matcher
    type: MemoryType | None
    """What the clause states; None for a shape that states nothing (chit-chat): stop there."""
    topic: str = ""
    importance: float = IMPORTANCE_PROFILE
    keyword_topic: bool = True
    write: Write | None = None
    """How the content is made; None: the clause in the third person."""
    when: Check | None = None
    """Must hold too, else the next rule is tried (a topic the clause must name)."""
    unless: Check | None = None
    """If it holds the clause states nothing and no later rule is tried ("I love it")."""
    task_if: re.Pattern[str] | None = None
    """Searched in the clause: a TASK rather than `type` where found (a deadline word)."""


def first_found(rules: Sequence[Rule], clause: str, third: Callable[[str], str]) -> Found | None:
    """What the first rule that fits the clause states (None if it states nothing or none fits).

    `third` is the language's third-person rewrite, the text of rules that give no `write`.
    """
    for rule in rules:
        match = rule.test(clause)
        if match is None or (rule.when is not None and not rule.when(clause, match)):
            continue
        if rule.type is None or (rule.unless is not None and rule.unless(clause, match)):
            return None
        task = rule.task_if is not None and rule.task_if.search(clause) is not None
        content = third(clause) if rule.write is None else rule.write(clause, match)
        kind = MemoryType.TASK if task else rule.type
        return Found(kind, content, rule.topic, rule.importance, rule.keyword_topic)
    return None


def topic_in(*topics: str) -> Check:
    """A `when`: the clause's vocabulary topic is one of these (any topic at all if none given)."""

    def check(clause: str, _match: re.Match[str]) -> bool:
        topic = topic_for(clause)
        return topic in topics if topics else bool(topic)

    return check
