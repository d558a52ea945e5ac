"""The offline extractor: memories from what a user said, by bilingual rules, without a model.

`extractor` holds the use case and documents every rule; `chinese` and `english`
the rules of each language; `cues` what they share; `vocabulary` the topics.
"""

from recalld_server.domain.offline.rule_extraction.cues import CONFIDENT, HEDGED, iso_date_ms
from recalld_server.domain.offline.rule_extraction.extractor import RuleExtractor, extract_from_text
from recalld_server.domain.offline.rule_extraction.vocabulary import MULTI_VALUED, TOPICS, topic_for

__all__ = [
    "CONFIDENT",
    "HEDGED",
    "MULTI_VALUED",
    "TOPICS",
    "RuleExtractor",
    "extract_from_text",
    "iso_date_ms",
    "topic_for",
]
