"""The keyword analyzer: one definition of how text becomes BM25 terms.

Milvus analyses stored content with `CONTENT_ANALYZER` (its jieba tokenizer and
filters); the working set analyses the same text in process with
`JiebaAnalyzer`, which applies the same steps with the `jieba` and
`snowballstemmer` packages, so both paths match the same words.
"""

from __future__ import annotations

import logging
import re
import threading

import jieba
import snowballstemmer

# Keyword search analyzer: jieba segments Chinese (and passes English words through);
# lowercase + cnalphanumonly drop case, spaces and punctuation; stop words keep
# "the user ..." and "用户 ..." from matching everything; the English stemmer lets
# "peanut allergy" find "allergic to peanuts". Identifiers: Milvus keeps "SO-88231"
# (and "3.5", "50%", "9:30") as one term, so an order number matches only itself;
# the in-process analyzer does the same for punctuation-joined tokens with a digit
# (without it, "so" would make order SO-88231 a keyword match for SO-88213).
STOP_WORDS = [
    "a",
    "an",
    "the",
    "and",
    "or",
    "but",
    "if",
    "of",
    "to",
    "in",
    "on",
    "at",
    "by",
    "for",
    "with",
    "about",
    "from",
    "as",
    "into",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "am",
    "do",
    "does",
    "did",
    "have",
    "has",
    "had",
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "i",
    "me",
    "my",
    "we",
    "our",
    "you",
    "your",
    "he",
    "she",
    "his",
    "her",
    "they",
    "them",
    "their",
    "user",
    "users",
    "s",
    "not",
    "no",
    "yes",
    "can",
    "will",
    "would",
    "should",
    "there",
    "的",
    "了",
    "是",
    "在",
    "和",
    "与",
    "也",
    "就",
    "都",
    "而",
    "及",
    "或",
    "吗",
    "呢",
    "吧",
    "啊",
    "我",
    "你",
    "他",
    "她",
    "它",
    "我们",
    "你们",
    "他们",
    "这",
    "那",
    "这个",
    "那个",
    "什么",
    "怎么",
    "哪",
    "哪里",
    "哪个",
    "谁",
    "用户",
    "一个",
    "有",
    "没有",
]
CONTENT_ANALYZER = {
    "tokenizer": "jieba",
    "filter": [
        "lowercase",
        "cnalphanumonly",
        {"type": "stop", "stop_words": STOP_WORDS},
        {"type": "stemmer", "language": "english"},
    ],
}

_ALPHANUMERIC = re.compile(r"^[0-9A-Za-z\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff]+$")
"""cnalphanumonly: tokens made only of Chinese characters, Latin letters and digits."""
_STOP = frozenset(STOP_WORDS)
_IDENTIFIER = re.compile(r"(?<![0-9A-Za-z])[0-9A-Za-z]+(?:[-_./:#@&+][0-9A-Za-z]+)+%?|[0-9]+%")
"""Punctuation-joined ASCII tokens: one term when they hold a digit (ids, versions, times)."""


class JiebaAnalyzer:
    """Text to BM25 terms in process, the steps of `CONTENT_ANALYZER`.

    A jieba search-mode cut, lowercase, alphanumeric tokens only, stop words out,
    English Snowball stems.

    Loading jieba's dictionary takes about a second: call `warm()` at start-up. The
    stemmer is not thread-safe, so each thread gets its own.
    """

    def __init__(self) -> None:
        self._tokenizer = jieba.Tokenizer()
        self._local = threading.local()
        self._stems: dict[str, str] = {}

    def warm(self) -> None:
        """Loads the dictionary now rather than on the first write or recall."""
        jieba.setLogLevel(logging.WARNING)  # it announces every dictionary load
        self._tokenizer.initialize()
        self.terms("warming the stemmer 预热")  # builds this thread's Snowball tables

    def _stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            stemmer = getattr(self._local, "stemmer", None)
            if stemmer is None:
                stemmer = self._local.stemmer = snowballstemmer.stemmer("english")
            stem = stemmer.stemWord(word)
            if len(self._stems) < 200_000:  # words repeat; bound the memo all the same
                self._stems[word] = stem
        return stem

    def terms(self, text: str) -> list[str]:
        """The BM25 terms of a text, in order, repeats kept (term frequency counts them)."""
        out: list[str] = []
        start = 0
        for match in _IDENTIFIER.finditer(text):
            token = match.group()
            if not any(c.isdigit() for c in token):
                continue  # "well-known": jieba splits it into words
            self._cut(text[start : match.start()], out)
            out.append(token.lower())
            start = match.end()
        self._cut(text[start:], out)
        return out

    def _cut(self, text: str, out: list[str]) -> None:
        if not text:
            return
        for piece in self._tokenizer.cut_for_search(text, HMM=True):
            token = piece.strip().lower()
            if not token or token in _STOP or not _ALPHANUMERIC.match(token):
                continue
            out.append(self._stem(token) if token.isascii() else token)
