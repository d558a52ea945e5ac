"""The domain's backends on the in-memory adapters (the reference implementation of
every port), with the real model: what the domain integration tests run on."""

from __future__ import annotations

from recalld_server.domain.core.ports import Backends
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.local import (
    LocalAccessTracker,
    LocalGenerations,
    LocalLockManager,
    SystemClock,
)
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from recalld_server.storage.memory_store import (
    InMemoryHistoryStore,
    InMemoryIdempotencyStore,
    InMemoryVectorStore,
)
from recalld_server.storage.profile_cache import LocalProfileCache


def in_memory_backends(
    embedder: MicroBatchingEmbedder,
    conversations: InMemoryConversations | None = None,
    queue: InMemoryExtractionQueue | None = None,
) -> Backends:
    """Fresh in-memory stores around the given model."""
    return Backends(
        InMemoryVectorStore(embedder.dimension),
        embedder,
        LocalLockManager(),
        SystemClock(),
        InMemoryHistoryStore(),
        InMemoryIdempotencyStore(),
        LocalAccessTracker(),
        LocalProfileCache(),
        LocalGenerations(),
        JiebaAnalyzer(),
        conversations or InMemoryConversations(),
        queue or InMemoryExtractionQueue(),
    )
