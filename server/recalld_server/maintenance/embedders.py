"""The embedding model a maintenance command runs: a bundled one or an endpoint's.

`recalld calibrate` and `recalld reembed` take the same flags as `recalld serve`
(`--embedding-model`, and `--embedding-base-url` with the endpoint's settings);
this is the one place that turns them into an embedder the command owns.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from recalld_server.domain.core.ports import Embedder
from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.embedding.openai_http import OpenAIEmbedder
from recalld_server.embedding.registry import EmbeddingModelSpec

STARTUP_TIMEOUT_S = 30.0
"""How long the first request retries an endpoint that cannot be reached yet."""

ModelChoice = EmbeddingModelSpec | EndpointSettings
"""A bundled model, or the settings of an OpenAI-compatible endpoint."""


class OwnedEmbedder(Embedder, Protocol):
    """An embedder the command owns: it is closed when the run ends."""

    async def close(self) -> None:
        """Releases the model (processes, connections)."""
        ...


async def open_model(choice: ModelChoice, max_batch: int = 256) -> OwnedEmbedder:
    """Loads a bundled model, or probes the endpoint once (the caller closes it).

    Raises:
        EndpointProbeError: The endpoint cannot be reached or answers badly.
    """
    if isinstance(choice, EndpointSettings):
        return await OpenAIEmbedder.connect(choice)
    return await asyncio.to_thread(choice.load, max_batch)
