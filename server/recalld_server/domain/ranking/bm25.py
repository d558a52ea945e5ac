"""BM25 over one user's memories, in process.

The same ranking function Milvus uses for its BM25 field (k1 = 1.2, b = 0.75),
over terms made by the keyword analyzer. Statistics (document count, lengths,
document frequencies) are the user's own: a word common in this user's
memories weighs less, whatever other tenants store.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

K1 = 1.2
B = 0.75


class Bm25Index:
    """Postings of one small corpus, updated as memories come and go."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        self._terms: dict[str, tuple[str, ...]] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, key: str, terms: Sequence[str]) -> None:
        """Indexes a document (replacing an earlier one with the same key)."""
        if key in self._lengths:
            self.remove(key)
        counts = Counter(terms)
        for term, count in counts.items():
            self._postings.setdefault(term, {})[key] = count
        self._terms[key] = tuple(counts)
        self._lengths[key] = len(terms)
        self._total_length += len(terms)

    def remove(self, key: str) -> None:
        """Forgets a document; unknown keys are ignored."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_length -= length
        for term in self._terms.pop(key):
            documents = self._postings[term]
            del documents[key]
            if not documents:
                del self._postings[term]

    def idf(self, term: str) -> float | None:
        """The term's inverse document frequency here (None if no document holds it)."""
        documents = self._postings.get(term)
        if not documents:
            return None
        count = len(self._lengths)
        return math.log(1.0 + (count - len(documents) + 0.5) / (len(documents) + 0.5))

    def unseen_idf(self) -> float:
        """The IDF a term would have if one more document held it: rarer than any here."""
        count = len(self._lengths)
        return math.log(1.0 + (count + 0.5) / 0.5)

    def idf_weights(self, terms: Iterable[str], unseen: float | None = None) -> dict[str, float]:
        """Each term's IDF; a term no document holds weighs `unseen` (default the rarest)."""
        missing = self.unseen_idf() if unseen is None else unseen
        out = {}
        for term in terms:
            value = self.idf(term)
            out[term] = missing if value is None else value
        return out

    def terms_of(self, key: str) -> tuple[str, ...]:
        """A document's distinct terms (empty for unknown keys)."""
        return self._terms.get(key, ())

    def scores(self, query_terms: Iterable[str]) -> dict[str, float]:
        """BM25 score of every document sharing a term with the query (others score 0)."""
        count = len(self._lengths)
        if not count:
            return {}
        average = max(self._total_length / count, 1e-9)
        out: dict[str, float] = {}
        for term in set(query_terms):
            documents = self._postings.get(term)
            if not documents:
                continue
            idf = math.log(1.0 + (count - len(documents) + 0.5) / (len(documents) + 0.5))
            for key, frequency in documents.items():
                norm = K1 * (1.0 - B + B * self._lengths[key] / average)
                out[key] = out.get(key, 0.0) + idf * frequency * (K1 + 1.0) / (frequency + norm)
        return out
