"""The "latest" lift: for a question about now, the newer of two similar memories ranks first.

Off for the default model (docs/calibration.md), on for WordLlama and for any
calibration that chooses it; the rule itself is tested here with the real model on
the in-memory adapters, with the lift on and off.
"""

from __future__ import annotations

import pytest

from recalld_server.domain.core.model import DAY_MS, MemoryType, NewMemory, Principal
from recalld_server.domain.core.recall_model import RecallQuery
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from tests.integration.domain.in_memory import in_memory_backends

PRINCIPAL = Principal("latest-tenant")
OLD = "The user carries an iPhone 13 as their phone."
NEW = "The user switched phones and now uses a Google Pixel 9."


async def _order(embedder: MicroBatchingEmbedder, lift: float, query: str) -> list[str]:
    backends = in_memory_backends(embedder)
    profiles = ProfileService(backends.store, backends.profile_cache, backends.clock)
    memories = UserMemories(backends, profiles.invalidate)
    # Keyword credit off: the lift alone decides against the cosine.
    fusion = FusionPolicy(keyword_weight=0.0, latest_bonus=lift, latest_similarity=0.2)
    policy = Policy(recall=RecallPolicy(fusion=fusion))
    service = MemoryService(backends, profiles, memories, policy=policy)
    now = backends.clock.now_ms()
    await service.write(
        PRINCIPAL,
        "u",
        [
            NewMemory(OLD, MemoryType.FACT, occurred_at=now - 400 * DAY_MS),
            NewMemory(NEW, MemoryType.EVENT, occurred_at=now - 30 * DAY_MS),
        ],
    )
    result = await service.recall(PRINCIPAL, RecallQuery("u", query, top_k=2))
    return [item.memory.content for item in result.items]


async def test_a_question_about_now_puts_the_newer_statement_first_with_the_lift(
    embedder: MicroBatchingEmbedder,
) -> None:
    query = "Which iPhone does the user have now?"  # words of the old memory, asked about now
    without = await _order(embedder, 0.0, query)
    assert without[0] == OLD  # the cosine and the words favour the old phone
    assert (await _order(embedder, 0.5, query))[0] == NEW


@pytest.mark.parametrize("lift", [0.0, 0.5])
async def test_a_question_not_about_now_is_left_to_the_cosine(
    embedder: MicroBatchingEmbedder, lift: float
) -> None:
    assert (await _order(embedder, lift, "Which iPhone model does the user carry?"))[0] == OLD
