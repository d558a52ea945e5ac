"""Pure scoring and packing: fusion of dense and keyword evidence, BM25, reranking, budgets."""

from __future__ import annotations

from recalld_server.domain.ranking.bm25 import Bm25Index
from recalld_server.domain.ranking.fusion import (
    NO_EVIDENCE,
    FusionPolicy,
    KeywordEvidence,
    QueryTerms,
    floor_for,
    fuse,
    keyword_evidence,
    passes,
    query_terms,
    unlifted,
)
from recalld_server.domain.ranking.packing import pack, render_context
from recalld_server.domain.ranking.reranking import Judgement, RerankPolicy, judgement, passage

__all__ = [
    "NO_EVIDENCE",
    "Bm25Index",
    "FusionPolicy",
    "Judgement",
    "KeywordEvidence",
    "QueryTerms",
    "RerankPolicy",
    "floor_for",
    "fuse",
    "judgement",
    "keyword_evidence",
    "pack",
    "passage",
    "passes",
    "query_terms",
    "render_context",
    "unlifted",
]
