"""The extractive summarizer: a session's running summary without a model.

Pure and deterministic (no I/O, no clock, no randomness): the same summary,
messages and budget always give the same text. It folds the previous summary
and new messages into at most `budget_tokens` tokens (`estimate_tokens`):

1. Split everything into sentences: after 。！？； (Chinese), after . ! ? when
   followed by a space, the end or Chinese text (so `3.5`, `v1.2`, `a@b.com`
   and common abbreviations stay whole), and at every newline.
2. Score each sentence for salience (`salience`): identifiers (SO-88231,
   PR-42, emails, URLs, dates, times, versions), numbers, capitalised names and
   acronyms, and preference, decision and commitment cues in both languages
   (我喜欢, 决定, 以后, I prefer, we decided, from now on...). The score is
   multiplied by the speaker's weight: user 1.0, assistant 0.6, system and
   tool 0.3; questions count half. Filler ("ok", "thanks", "好的", "谢谢") and
   fragments too short to say anything score zero, and so do repeats of a
   sentence already seen; nothing scoring under 0.5 is kept (an assistant's
   plain question, a tool's sentence without identifiers or numbers).
3. Sentences of the previous summary compete with the new ones: those without
   identifiers or numbers lose 15% of their score (the old summary gives way
   to new material first, and last the ids and figures it holds).
4. Keep the best sentences that fit (highest score first; between equals, the
   newer one): first the salient ones (score 2 or more), the previous
   summary's taking at most 60% of the budget while new ones still compete
   (so each fold makes room for what is new, and old material fades unless it
   is among the most salient); then the best of the rest in what is left.
5. Render them in their original order, one line per message (or per line of
   the previous summary), prefixed with the speaker (`user: `, `assistant: `).
   Sentences are never cut, except one too long on its own (more than half
   the budget and more than 64 tokens, or more than the whole budget): it is
   cut at a word or character boundary (never inside a word, number or
   identifier) and ends with "…".

The output is also the input of the next fold: its `role: ` prefixes are read
back, so a sentence keeps its speaker's weight across folds. Lines without a
prefix (a summary written by another summarizer) weigh 0.8.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence

from recalld_server.domain.core.conversation import Message, Role
from recalld_server.domain.core.text import estimate_tokens, normalise, token_weight

ROLE_WEIGHT: dict[Role | None, float] = {
    Role.USER: 1.0,
    Role.ASSISTANT: 0.6,
    Role.SYSTEM: 0.3,
    Role.TOOL: 0.3,
    None: 0.8,
}
"""How much a speaker's sentence counts (None: an unprefixed line of an older summary)."""

OLD_PLAIN_DISCOUNT = 0.85
"""Score factor of a previous-summary sentence without identifiers or numbers."""

OLD_SHARE = 0.6
"""Of the budget, what the previous summary may take before new sentences are placed."""

SALIENT = 2.0
"""A score from which a sentence holds something (an identifier, a number, a cue, names)."""

ELLIPSIS = "…"

_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CJK_ANY = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]"
)

# Sentence ends: Chinese marks always; . ! ? only before a space, the end, or CJK text;
# a newline always. Closing quotes and brackets stay with their sentence.
_BOUNDARY = re.compile(
    "[。！？；]+[”’」』）)\"']*"
    "|[.!?]+[\"'”’)\\]」』]*(?=\\s|$|[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef])"
    "|\n"
)
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "no", "fig"}
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text, stripped, in order (terminal punctuation kept)."""
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group().startswith("."):
            before = _WORD_BEFORE.search(text, 0, match.start())
            if before is not None:
                word = before.group(1).lower()
                # "Dr. Li", "e.g. this", "J. Smith": not the end of a sentence.
                if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                    continue
        piece = text[start : match.end()].strip()
        if piece:
            sentences.append(piece)
        start = match.end()
    rest = text[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


_A = r"(?<![A-Za-z0-9_])"
_Z = r"(?![A-Za-z0-9_])"
IDENTIFIER = re.compile(
    r"https?://[^\s，。！？；、）」]+"  # URLs
    r"|www\.[^\s，。！？；、）」]+"
    r"|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"  # emails
    rf"|{_A}(?:[A-Za-z0-9-]+\.)+(?:com|org|net|io|dev|ai|app|cn|co|uk|de|jp|edu|gov){_Z}"
    rf"|{_A}\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:[T ]\d{{1,2}}:\d{{2}}(?::\d{{2}})?)?{_Z}"  # ISO dates
    rf"|{_A}\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?{_Z}"  # 12/05, 12/05/2026
    r"|\d{2,4}年\d{1,2}月(?:\d{1,2}[日号])?|\d{1,2}月\d{1,2}[日号]"  # Chinese dates
    rf"|{_A}\d{{1,2}}:\d{{2}}(?::\d{{2}})?(?:\s?[ap]m)?{_Z}"  # times
    rf"|{_A}v?\d+(?:\.\d+){{2,}}{_Z}|{_A}v\d+(?:\.\d+)*{_Z}"  # versions
    rf"|{_A}[A-Za-z][A-Za-z0-9]{{0,15}}[-_#]\d[A-Za-z0-9_-]*{_Z}"  # SO-88231, PR-42, JIRA_12
    rf"|#\d+{_Z}"  # #42
    rf"|{_A}(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{{4,}}{_Z}",  # ABC123, a1b2c3d
    re.IGNORECASE,
)
"""Identifiers, dates and times: what a summary must keep character for character."""

_NUMBER = re.compile(
    r"\d+(?:[.,]\d+)*%?"
    r"|[零〇一二两三四五六七八九十百千万亿]+(?:元|块|岁|天|周|个月|年|次|人|小时|分钟|点|号|万|公斤|斤)"
)
_NAME = re.compile(
    rf"{_A}(?:[A-Z][a-z]+[A-Z][A-Za-z]*|[A-Z]{{2,}}[a-z]*|[A-Z][a-z]+){_Z}"  # CamelCase, AWS, Alice
    r"|[《「『“][^》」』”]{1,30}[》」』”]"  # titles and quoted names in Chinese
)
_NOT_NAMES = frozenset({"I", "I'm", "OK", "Ok"})
_CUE = re.compile(
    r"我(?:也|还|都|很|非常|特别|最|真的|比较|更|一直|平时|一般|不太|不)?"
    r"(?:喜欢|爱|偏好|讨厌|习惯|希望|需要|要求|住在|叫)"
    r"|决定|定了|确定|以后|今后|从现在开始|记住|别忘|不要忘|一定要|必须|截止|提醒|改成|换成|改用|重要"
    r"|\bI(?:'d| would)? prefer\b|\bI (?:really )?(?:like|love|hate|need|want)\b"
    r"|\bI (?:don't|do not|can't|cannot) (?:like|stand|eat|drink|use)\b"
    r"|\b(?:we|I)(?:'ve| have)? (?:decided|agreed|chose|settled)\b|\blet's (?:go with|use)\b"
    r"|\bwe(?:'ll| will) use\b|\bfrom now on\b|\bgoing forward\b|\bremember\b|\bdon't forget\b"
    r"|\bmake sure\b|\bmust\b|\bdeadline\b|\bdue\b|\bremind me\b|\balways\b|\bnever\b"
    r"|\bI'm allergic\b|\bI am allergic\b|\ballerg|\bI live\b|\bI work\b|\bmy name is\b"
    r"|\binstead of\b|\bswitch(?:ed)? to\b|\bimportant\b|过敏",
    re.IGNORECASE,
)
_FILLER_WORDS = sorted(
    {
        "ok", "okay", "k", "kk", "thanks", "thank you", "thank you so much", "thx", "ty",
        "sure", "yes", "yeah", "yep", "yup", "no", "nope", "got it", "cool", "great", "nice",
        "fine", "alright", "all right", "hi", "hello", "hey", "bye", "goodbye", "see you",
        "lol", "haha", "hmm", "hm", "um", "uh", "right", "perfect", "awesome", "understood",
        "noted", "np", "no problem", "you're welcome", "welcome", "sounds good", "good",
        "done", "wow", "oh", "ah", "sorry", "please", "of course", "exactly", "indeed",
        "好的", "好", "好滴", "好嘞", "好吧", "嗯", "嗯嗯", "哦", "噢", "啊", "呃", "谢谢",
        "谢谢你", "多谢", "感谢", "收到", "明白", "明白了", "知道了", "了解", "可以", "行",
        "对", "对的", "是的", "是", "没问题", "哈哈", "哈哈哈", "你好", "您好", "再见",
        "拜拜", "不客气", "没事", "辛苦了", "棒", "太好了", "好的呢", "ok的", "hi there",
        "hello there", "hey there", "good morning", "good night", "morning", "cheers",
        "早上好", "晚上好", "早", "在吗", "嗨", "了解了", "记下了", "收到了", "了", "啦",
        "呀", "呢", "吧", "嘛", "that's all", "that's it", "no thanks", "nothing else",
        "all good", "就这样", "没有了", "没了", "就这些", "暂时没有",
    },
    key=lambda w: (-len(w), w),
)  # fmt: skip
_FILLER = re.compile(
    r"(?:(?:" + "|".join(re.escape(w) for w in _FILLER_WORDS) + r")\s*)+", re.IGNORECASE
)
_NON_WORD = re.compile(r"[\W_]+")
MIN_WEIGHT = 2.5
"""Sentences lighter than this (in tokens) say nothing unless they hold a number or id."""

MIN_SCORE = 0.5
"""Sentences scoring less (the speaker's weight included) are never kept: an assistant's
plain question, a tool's or system's sentence without identifiers or numbers."""


@functools.lru_cache(maxsize=65_536)
def salience(sentence: str) -> float:
    """How worth keeping a sentence is, before the speaker's weight (0: never keep it).

    Remembered: a window's sentences are scored again at every fold and every
    GetContext that folds them, and scoring is most of a fold's cost.
    """
    bare = _NON_WORD.sub(" ", normalise(sentence)).strip()
    if not bare or _FILLER.fullmatch(bare):
        return 0.0
    identifiers = len(IDENTIFIER.findall(sentence))
    rest = IDENTIFIER.sub(" ", sentence)  # an identifier's digits and letters count once
    numbers = len(_NUMBER.findall(rest))
    if not identifiers and not numbers and token_weight(sentence) < MIN_WEIGHT:
        return 0.0
    names = [
        m.group()
        for m in _NAME.finditer(rest)
        if m.group() not in _NOT_NAMES and m.start() != len(rest) - len(rest.lstrip())
    ]
    score = 1.0
    score += 3.0 * min(identifiers, 3)
    score += 1.5 * min(numbers, 3)
    score += 0.7 * min(len(names), 3)
    if _CUE.search(sentence):
        score += 3.0
    if sentence.rstrip().endswith(("?", "？")):
        score *= 0.5  # questions carry less than answers and statements
    return score


def has_figures(sentence: str) -> bool:
    """Whether a sentence holds an identifier or a number."""
    return bool(IDENTIFIER.search(sentence) or _NUMBER.search(sentence))


# Pieces a sentence may be cut between: a run of Latin word characters with the
# characters identifiers and URLs are made of, a run of spaces, or one character.
# Their weights add up to the weight of the whole (token_weight splits words the same way).
_PIECE = re.compile(r"[A-Za-z0-9_@.:/#%+&=?~\-]+|\s+|.", re.DOTALL)
_TRAILING_SOFT = re.compile(r"[\s,，、:：;；\-—(（\[]+$")


def truncate(text: str, max_weight: float) -> str:
    """The longest head of `text` within `max_weight` tokens, ending with "…".

    Cuts between words (Latin) or characters (CJK), never inside a word, a number
    or an identifier. Returns "" when not even one piece fits.
    """
    if token_weight(text) <= max_weight:
        return text
    room = max_weight - token_weight(ELLIPSIS)
    used = 0.0
    end = 0
    for piece in _PIECE.finditer(text):
        weight = token_weight(piece.group())
        if used + weight > room:
            break
        used += weight
        end = piece.end()
    head = _TRAILING_SOFT.sub("", text[:end])
    if not head.strip():
        return ""
    return head + ELLIPSIS


def cut_to_budget(text: str, budget_tokens: int) -> str:
    """`text` cut to `budget_tokens` (estimate_tokens), at a sentence end when one fits.

    Keeps the head: whole sentences (line breaks kept) while they fit; if not even
    the first sentence fits, its head up to a word boundary, ending with "…".
    """
    text = text.strip()
    if budget_tokens <= 0:
        return ""
    if estimate_tokens(text) <= budget_tokens:
        return text
    ends = [m.end() for m in _BOUNDARY.finditer(text)]
    # A head of a text never weighs more than the text: bisect the sentence ends.
    low, high, best = 0, len(ends) - 1, ""
    while low <= high:
        middle = (low + high) // 2
        head = text[: ends[middle]].rstrip()
        if estimate_tokens(head) <= budget_tokens:
            best, low = head, middle + 1
        else:
            high = middle - 1
    if best:
        return best
    limit = float(budget_tokens)
    cut = truncate(text, limit)
    while cut and estimate_tokens(cut) > budget_tokens:  # rounding at the edge
        limit -= 1.0
        cut = truncate(text, limit)
    return cut


_PREFIX = re.compile(r"^(user|assistant|system|tool):\s*", re.IGNORECASE)


@dataclasses.dataclass(slots=True)
class _Sentence:
    unit: int
    order: int
    text: str
    score: float
    weight: float
    old: bool


@dataclasses.dataclass(slots=True)
class _Unit:
    prefix: str
    weight: float
    sentences: list[_Sentence]


def _join(sentences: Sequence[str]) -> str:
    out = ""
    for sentence in sentences:
        if out and not _CJK_ANY.match(out[-1]):
            out += " "  # after Chinese (。) sentences follow without a space
        out += sentence
    return out


class ExtractiveSummarizer:
    """Keeps the most salient sentences of a conversation within a token budget."""

    @property
    def name(self) -> str:
        """Which summarizer (for spans and logs)."""
        return "extractive"

    async def fold(self, summary: str, messages: Sequence[Message], budget_tokens: int) -> str:
        """The summary of `summary` followed by `messages`, within `budget_tokens` tokens."""
        return summarize(summary, messages, budget_tokens)


def _units(summary: str, messages: Sequence[Message]) -> list[tuple[Role | None, str, bool]]:
    units: list[tuple[Role | None, str, bool]] = []
    for line in summary.splitlines():
        if not line.strip():
            continue
        match = _PREFIX.match(line)
        role = Role[match.group(1).upper()] if match else None
        units.append((role, line[match.end() :] if match else line, True))
    for message in messages:
        units.append((message.role, message.content, False))
    return units


def summarize(summary: str, messages: Sequence[Message], budget_tokens: int) -> str:
    """The pure function behind `ExtractiveSummarizer.fold`."""
    if budget_tokens <= 0:
        return ""
    units: list[_Unit] = []
    sentences: list[_Sentence] = []
    seen: set[str] = set()
    order = 0
    for role, text, old in _units(summary, messages):
        prefix = f"{role.name.lower()}: " if role is not None else ""
        prefix_weight = token_weight(prefix)
        unit = _Unit(prefix, prefix_weight, [])
        # One sentence may take half the budget (or 64 tokens) at most, and never
        # more than the prefix leaves.
        longest = min(max(budget_tokens / 2, 64.0), budget_tokens - prefix_weight)
        for raw in split_sentences(text):
            order += 1
            key = normalise(raw)
            score = salience(raw) * ROLE_WEIGHT[role]
            if key in seen:
                score = 0.0
            seen.add(key)
            if score < MIN_SCORE:
                continue
            if old and not has_figures(raw):
                score *= OLD_PLAIN_DISCOUNT
            sentence = truncate(raw, longest) if longest > 0 else ""
            if not sentence:
                continue
            item = _Sentence(len(units), order, sentence, score, token_weight(sentence), old)
            unit.sentences.append(item)
            sentences.append(item)
        units.append(unit)

    kept: set[int] = set()
    open_units: set[int] = set()
    used = used_old = 0.0
    ranked = sorted(sentences, key=lambda s: (-s.score, -s.order))
    # First the salient sentences, the previous summary's taking OLD_SHARE of the
    # budget at most so that new material finds room; then whatever fits.
    for capped in (True, False):
        for item in ranked:
            if item.order in kept or (capped and item.score < SALIENT):
                continue
            cost = item.weight + (0.0 if item.unit in open_units else units[item.unit].weight)
            if used + cost > budget_tokens:
                continue
            if capped and item.old and used_old + cost > OLD_SHARE * budget_tokens:
                continue
            used += cost
            used_old += cost if item.old else 0.0
            kept.add(item.order)
            open_units.add(item.unit)

    rendered = _render(units, kept)
    # The weights add up to the estimate of the whole up to rounding: drop the
    # least salient sentences while the rendered text is over the budget.
    by_score = sorted(
        (s for s in sentences if s.order in kept), key=lambda s: (s.score, s.order), reverse=True
    )
    while by_score and estimate_tokens(rendered) > budget_tokens:
        kept.discard(by_score.pop().order)
        rendered = _render(units, kept)
    return rendered


def _render(units: Sequence[_Unit], kept: set[int]) -> str:
    lines = []
    for unit in units:
        chosen = [s.text for s in unit.sentences if s.order in kept]
        if chosen:
            lines.append(unit.prefix + _join(chosen))
    return "\n".join(lines)
