"""The rule extractor: memories from what a user said, without a model.

Deterministic, Chinese and English. Only USER messages are read. Each message is
split into sentences and clauses (at ；; and at commas or "and"/"but" that start
a new statement: ", I ...", "，我...", "，也..."; a clause without a subject takes
the previous clause's, so "我住在杭州，在阿里巴巴工作" gives two facts), and each
clause is matched against the rules below, first match wins. Leading discourse
markers (by the way, 对了, 另外, remember that, 记住...) are skipped.

| Rule | Type | Importance | Chinese example | English example |
| --- | --- | --- | --- | --- |
| allergy, medical | FACT | 0.9 | 我对花生过敏 | I'm allergic to peanuts |
| name | FACT | 0.6 | 我叫陈静 | My name is Chen Jing |
| home | FACT | 0.6 | 我住在杭州 | I live in Berlin |
| employer | FACT | 0.6 | 我在阿里巴巴工作 | I work at Siemens |
| diet | FACT | 0.6 | 我吃素 | I'm vegetarian |
| preference | PREFERENCE | 0.6 | 我更喜欢美式 | I prefer tea |
| instruction | PREFERENCE | 0.6 | 以后都用中文回答 | From now on, answer in English |
| other facts | FACT | 0.6 | 我是程序员, 我的猫叫咪咪 | I'm a nurse, my timezone is UTC+8 |
| decision | DECISION | 0.6 | 我们决定用PostgreSQL | We decided to use PostgreSQL |
| task | TASK | 0.5 | 提醒我明天交报告 | Remind me to call Bob |
| event | EVENT | 0.5 | 我下周三去上海出差 | I'm flying to Tokyo on 2026-12-05 |

The cues of each rule, anchored at the start of the clause:

- allergy, medical: 我(…)对…过敏, 我…过敏, 我有糖尿病/哮喘…; I'm allergic to, I have a
  … allergy, I'm diabetic/celiac, I have diabetes/asthma.
- name: 我叫, 我的名字是, 叫我; my name is, call me, I go by.
- home: 我住在, 我家在, 我搬到; I live in, I'm based in, I moved to.
- employer: 我在…工作/上班/任职; I work at/for, I'm working/employed at.
- diet: 我吃素, 我是素食主义者; I'm (a) vegetarian/vegan/pescatarian/lactose intolerant….
- preference: 我(也/很/最/不…)喜欢/爱/偏好/更喜欢/偏爱/讨厌/受不了/习惯/希望你,
  我不吃/不喝/只喝; I (really…) prefer/like/love/enjoy/hate/dislike/don't like/can't
  stand, I'd prefer/rather, I always/never/usually/only …, I'm a (big) fan of, my
  favourite … is.
- instruction: 以后都/以后请/以后别/今后/从现在开始/每次都/一律/永远/别再/不要再; from
  now on, going forward, in the future, always …, never …, please always/never, stop
  …ing, no more.
- other facts: 我是…, 我的…是/叫/在…, 我养了…, 我有一只(猫/狗), 我会说(语言),
  我用(with a topic); I am a/an …, I'm from …, my … is …, I have a (pet), I speak
  (a language), I use (with a topic), I'm in the … time zone.
- decision: 我们/咱们决定/定了/选择/就用/改用/用, 我决定, 决定用, 那就用…吧; we
  decided/agreed/chose/settled on, we'll use, we're going with, let's go with/use/
  switch to, I decided, "Decision: …".
- task: 提醒我, 我需要/我得/我必须/我要记得, 别忘了/记得; remind me, I need to, I have
  to, I must, I've got to, don't forget to, remember to.
- event: a date (今天, 明天, 下周, 周三, 12月5日, 2026-12-05, 3点…) with 我/我们 or an event
  word (开会, 面试, 航班, 出差…); a date (today, tomorrow, next Monday, on Friday, Dec
  5, 2026-12-05, at 3pm…) with I/we/my or an event word (meeting, flight,
  appointment…). With a deadline word (需要, 截止, 提交; need to, due, by Friday,
  submit) it is a TASK.

`occurred_at` of a task or event is the absolute ISO date (2026-12-05, with
an optional HH:MM, UTC) when the clause holds one, else 0.

Nothing is extracted from a clause that is a question (ends with ?/？, starts
with do/does/can/what/..., ends with 吗/呢, or asks 什么/哪/谁/怎么/多少...),
a hypothetical (如果/要是/假如/假设/万一/…的话, if/suppose/imagine/unless/wish),
reported denial (我没说/didn't say), approval of "it/this/that" (I love it, 我喜欢这个),
a greeting or chit-chat (nothing matches). A trailing "，你呢？" / ", what about you?"
is dropped and the statement before it kept.

Hedges (可能/也许/大概/好像/似乎/估计/或许/说不定/我觉得/不确定, maybe/perhaps/
probably/possibly/I think/I guess/I believe/not sure/might/kind of) give
confidence 0.4 (the write rules keep memories under 0.5 as drafts); otherwise 0.9.

Content is a third-person sentence where the rewrite is simple ("I prefer tea"
-> "The user prefers tea"; "我住在杭州" -> "用户住在杭州"; "we decided to use X" ->
"The user decided to use X"; instructions -> "The user asked: ..." / "用户要求：..."),
with "Possibly, " / 可能 when a leading hedge was removed; otherwise the clause
verbatim. Topic keys come from TOPICS (see `topic_for`) except the MULTI_VALUED
ones; tasks and events get none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from recalld_server.domain.core.conversation import MemoryCandidate, Message, Role
from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.core.text import normalise
from recalld_server.domain.guards.validation import MAX_CONTENT_CHARS
from recalld_server.domain.offline.extractive_summary import split_sentences
from recalld_server.domain.offline.rule_extraction.chinese import (
    ZH_LEADING_HEDGE,
    zh_clauses,
    zh_rules,
)
from recalld_server.domain.offline.rule_extraction.cues import (
    CONFIDENT,
    DENIAL,
    HEDGE,
    HEDGED,
    HYPOTHETICAL,
    MAX_CLAUSE_CHARS,
    QUESTION_EN,
    QUESTION_ZH,
    iso_date_ms,
    statement,
)
from recalld_server.domain.offline.rule_extraction.english import (
    EN_LEADING_HEDGE,
    en_clauses,
    en_rules,
)
from recalld_server.domain.offline.rule_extraction.vocabulary import CJK, MULTI_VALUED, topic_for

_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _mostly_chinese(text: str) -> bool:
    """At least as many Chinese characters as Latin words (and some): Chinese rules first."""
    cjk = len(CJK.findall(text))
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


def _candidate(clause: str) -> MemoryCandidate | None:
    clause = clause.replace("’", "'").replace("‘", "'").strip()
    if not clause or len(clause) > MAX_CLAUSE_CHARS:
        return None
    has_cjk = bool(CJK.search(clause))
    if HYPOTHETICAL.search(clause) or DENIAL.search(clause):
        return None
    if QUESTION_EN.match(clause) or (has_cjk and QUESTION_ZH.search(clause)):
        return None
    hedged = bool(HEDGE.search(clause))
    core = EN_LEADING_HEDGE.sub("", ZH_LEADING_HEDGE.sub("", clause)).strip()
    if not core:
        return None
    chinese = _mostly_chinese(core)
    first, second = (zh_rules, en_rules) if chinese else (en_rules, zh_rules)
    found = first(core)
    if found is None and has_cjk:
        found = second(core)  # "I prefer 乌龙茶", "我用VS Code"
    if found is None:
        return None
    content = found.content.strip()
    if core != clause:  # a leading hedge was removed: say it in the content
        if content.startswith("用户") and not HEDGE.search(content):
            content = "用户可能" + content[2:]
        elif content.startswith("The user"):
            content = "Possibly, the user" + content[len("The user") :]
        elif not HEDGE.search(content):
            content = ("可能：" if chinese else "Possibly: ") + content
    topic = found.topic
    if not topic and found.keyword_topic:
        topic = topic_for(core)
    if topic in MULTI_VALUED:
        topic = ""
    occurred_at = iso_date_ms(core) if found.type in (MemoryType.TASK, MemoryType.EVENT) else 0
    return MemoryCandidate(
        content=content[:MAX_CONTENT_CHARS],
        type=found.type,
        topic_key=topic,
        confidence=HEDGED if hedged else CONFIDENT,
        importance=found.importance,
        occurred_at=occurred_at,
    )


def extract_from_text(text: str) -> list[MemoryCandidate]:
    """Candidates from one user message, in order."""
    out: list[MemoryCandidate] = []
    for raw in split_sentences(text):
        sentence = statement(raw)
        if sentence is None:
            continue
        clauses = zh_clauses(sentence) if _mostly_chinese(sentence) else en_clauses(sentence)
        for clause in clauses:
            candidate = _candidate(clause)
            if candidate is not None:
                out.append(candidate)
    return out


class RuleExtractor:
    """Proposes memories from user messages by bilingual rules (see the module docstring)."""

    @property
    def name(self) -> str:
        """Which extractor (for spans and logs)."""
        return "rules"

    async def extract(self, messages: Sequence[Message]) -> list[MemoryCandidate]:
        """Candidate memories, in message order; [] when nothing is worth keeping."""
        out: list[MemoryCandidate] = []
        seen: set[str] = set()
        for message in messages:
            if message.role is not Role.USER:
                continue
            for candidate in extract_from_text(message.content):
                key = normalise(candidate.content)
                if key not in seen:
                    seen.add(key)
                    out.append(candidate)
        return out
