"""The policy of a model nobody has calibrated: rules that do not read the score's scale.

A threshold measured on one model says nothing about another: the default model
scores unrelated memories ~0.07, WordLlama unrelated Chinese up to 0.86, and
models of the e5 family put almost every pair above 0.7. Until `recalld
calibrate` has measured the model, every rule that compares a cosine with a
constant is switched off or made relative:

- duplicates: equal normalised contents only (EXACT_HASH_ONLY); no cosine
  merges two memories, so no fact is lost to a threshold that means nothing;
- the fact judge is never asked (its floors are EXACT_HASH_ONLY): a floor under
  the model's noise would put a user's every pair to a model, and consolidation's
  pair scan would grow with the square of the user's memories;
- recall ranks by the cosine itself, weighed by recency and importance, and the
  gate is relative only (a memory must reach `relative_floor` of the best one's
  score; no absolute floor). Every remaining rule multiplies the score (recency,
  importance, `identifier_miss_factor`: a query identifier the memory lacks), so
  multiplying every cosine by a positive constant changes neither the order nor
  what the gate keeps;
- what adds a constant to a cosine is off: `keyword_weight` (a keyword match
  worth 1.0 is everything on a model whose cosines span 0.05, little on one whose
  span 1.0; no additive weight is right for every scale, and the multiplicative
  form would need a different fusion), `identifier_bonus`, `recent_bonus` and
  `latest_bonus` (which also depends on `latest_similarity`, a cosine).

The price, measured on the default model in docs/calibration.md: keyword
evidence no longer lifts a memory (an identifier a memory holds does not raise
it; one it lacks still sinks it), a memory found only by the keyword search
scores 0 and is left out, and the gate never abstains on its own (the best
candidate always passes).
"""

from __future__ import annotations

from recalld_server.calibration.model import EXACT_HASH_ONLY, Calibration
from recalld_server.domain.ranking.fusion import FusionPolicy

FALLBACK_FUSION = FusionPolicy(
    keyword_weight=0.0,
    identifier_bonus=0.0,
    recent_bonus=0.0,
    floor=0.0,
    short_query_floor=0.0,
    latest_bonus=0.0,
)
"""Scale-free fusion: the defaults' multiplicative rules and relative gate, nothing added."""


def fallback(model_id: str) -> Calibration:
    """The scale-free policy of an uncalibrated model (see the module's docstring)."""
    return Calibration(
        model_id=model_id,
        near_duplicate_similarity=EXACT_HASH_ONLY,
        judge_duplicate_similarity=EXACT_HASH_ONLY,
        judge_contradiction_similarity=EXACT_HASH_ONLY,
        fusion=FALLBACK_FUSION,
        calibrated=False,
        source="fallback",
    )
