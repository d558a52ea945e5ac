"""What the wording of two memories says that their embeddings do not.

A sentence embedding scores "The user likes latte" and "The user dislikes latte"
0.97, "prefers tea to coffee" and "prefers coffee to tea" 1.0: it sees which
words occur, barely which one changed. Merging on similarity alone folded 19 of
66 labelled distinct pairs (recalld_server/calibration/data/pairs.json, test half).
These rules look at the words themselves, so a near-duplicate is merged only
when its wording leaves no room for a different fact.

Pure functions over text: words are lower-cased Latin words (a light plural
strip) and single CJK characters, so both languages are compared the same way.
"""

from __future__ import annotations

import difflib
import re

from recalld_server.domain.core.text import normalise

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\u3400-\u9fff]")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[a-z]")


def _vocabulary(words: str, characters: str = "") -> frozenset[str]:
    """Space-separated words plus single characters (Chinese words of one character)."""
    return frozenset(words.split()) | frozenset(characters)


_FUNCTION_WORDS = _vocabulary(
    "the a an user to of in on at for with and or their his her its this that these those"
    " it as by from into there",
    "的了和与也都很把被这那个一在对",
)
"""Articles, prepositions, pronouns, particles, the subject every memory has:
changing them never makes a different fact."""

_AUXILIARIES = _vocabulary("is are be been being am has have having", "是有")
"""Copulas and present auxiliaries: rephrasing swaps them ("is allergic" / "has an allergy").

Past forms (was, had) are not here: "has a cat" and "had a cat" are different facts.
"""

_NEGATIONS = _vocabulary(
    "not no without never don't doesn't didn't isn't aren't can't won't cannot", "不没无别"
)
"""Negations compare as one word: "without sugar" says what "no sugar" says."""

_LIKING = _vocabulary("like love enjoy prefer fond", "爱") | {"喜欢", "喜爱", "偏爱", "钟爱"}
"""Verbs of liking compare as one word: "爱喝美式" says what "喜欢喝美式" says.

Their opposites (dislike, hate, 讨厌) are other words, and a negation still counts.
"""

_DIRECTIONAL = _vocabulary("to than over instead from", "比给向对")
"""Words that make the order of the others meaningful ("prefers tea to coffee")."""

_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|next|last|ago|until|used to|anymore|no longer)\b"
    r"|[去今明前后昨]年|[昨今明前后]天|[上下这本]+(?:个)?(?:周|星期|月)|以前|曾经|不再"
)
"""Relative times and tense cues: "next year" and "last year" are different facts."""

MIN_ALIGNED_SHARE = 0.7
"""Share of the shorter text's words, in order, that makes two texts one sentence edited.

Calibrated on the training half of the labelled pairs: at the default model's
duplicate threshold it merges 12 of 67 paraphrases with no false merge (the test
half: 10 of 67, no false merge; benchmarks/README.md has the table).
"""


def _words(text: str) -> list[str]:
    folded = normalise(text).replace("\u2019", "'").replace("用户", " user ")
    for verb in ("喜欢", "喜爱", "偏爱", "钟爱"):
        folded = folded.replace(verb, " like ")
    out = []
    for word in _WORD.findall(folded):
        if word.endswith("'s"):
            word = word[:-2]
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word in _NEGATIONS:
            word = "not"
        elif word in _LIKING:
            word = "like"
        out.append(word)
    return out


def script(text: str) -> str:
    """Which script carries the text: "cjk" for Chinese characters, else "latin"."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(normalise(text)))
    return "cjk" if cjk * 2 >= latin and cjk else "latin"


def differ_in_detail(a: str, b: str) -> bool:
    """True when two similar texts may still state different facts.

    - One adds what the other lacks ("drinks coffee" / "drinks decaf coffee only").
    - One sentence with a content word swapped ("sister" / "brother", "am" / "pm"):
      most words align in order, yet a content word differs on each side.
    - The same words in an order a directional word makes meaningful.
    - A different relative time or tense cue ("明年" / "去年", "used to").
    Paraphrases reword more than they keep, so they pass.
    """
    if sorted(_WHEN.findall(normalise(a))) != sorted(_WHEN.findall(normalise(b))):
        return True
    words_a, words_b = _words(a), _words(b)
    content_a = {w for w in words_a if w not in _FUNCTION_WORDS}
    content_b = {w for w in words_b if w not in _FUNCTION_WORDS}
    only_a, only_b = content_a - content_b, content_b - content_a
    if not only_a and not only_b:
        order_a = [w for w in words_a if w not in _FUNCTION_WORDS]
        order_b = [w for w in words_b if w not in _FUNCTION_WORDS]
        return order_a != order_b and any(w in _DIRECTIONAL for w in (*words_a, *words_b))
    added_a, added_b = only_a - _AUXILIARIES, only_b - _AUXILIARIES
    if not added_a and not added_b:
        return False
    if not added_a or not added_b:
        return True
    matcher = difflib.SequenceMatcher(a=words_a, b=words_b, autojunk=False)
    aligned = sum(block.size for block in matcher.get_matching_blocks())
    return aligned / max(1, min(len(words_a), len(words_b))) >= MIN_ALIGNED_SHARE
