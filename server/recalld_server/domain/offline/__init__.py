"""The model-free Summarizer and Extractor: the offline twins of `llm/`."""

from __future__ import annotations

from recalld_server.domain.offline.extractive_summary import ExtractiveSummarizer, cut_to_budget
from recalld_server.domain.offline.rule_extraction import TOPICS, RuleExtractor

__all__ = ["TOPICS", "ExtractiveSummarizer", "RuleExtractor", "cut_to_budget"]
