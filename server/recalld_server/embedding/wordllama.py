"""A second offline model: WordLlama `l2_supercat` at 256 dimensions.

Static token embeddings distilled from Llama 2's embedding table, shipped inside
the `wordllama` wheel (MIT): the tokenizer and the 256-dimension weights are
files of the package, so nothing is downloaded. It is English-centred (Chinese
falls back to byte tokens and matches poorly) and much faster than USE (about
0.1 ms per sentence): the model to switch to when a deployment is English-only
and embedding cost matters, and the second vector space that proves a model
switch never mixes spaces.

`WordLlama.load(disable_download=True)` cannot be used: 0.3.9 looks for the
tokenizer under `tokenizer/` while the wheel ships it under `tokenizers/`, and
without `disable_download` it would fetch it from Hugging Face. The files are
therefore opened from the package directory directly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recalld_server.domain.core.ports import Vectors
from recalld_server.embedding.batching import MicroBatchingEmbedder

WORDLLAMA_MODEL_ID = "wordllama-l2-supercat-256"
WORDLLAMA_DIMENSION = 256


def load_wordllama(max_batch: int = 64, processes: int = 1) -> MicroBatchingEmbedder:
    """Loads the packaged weights (~0.3 s), wrapped in a micro-batching embedder.

    On a thread of the server, whatever `processes` says: ~0.1 ms a text leaves
    nothing to gain from a process of its own.
    """
    del processes
    import wordllama  # heavy import: only when this model is actually used
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    package = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(
        str(package / "tokenizers" / "l2_supercat_tokenizer_config.json")
    )
    weights_file = package / "weights" / f"l2_supercat_{WORDLLAMA_DIMENSION}.safetensors"
    with safe_open(str(weights_file), framework="np", device="cpu") as weights:
        table = weights.get_tensor("embedding.weight")
    model = WordLlamaInference(table, tokenizer, binary=False)

    def encode(texts: list[str]) -> Vectors:
        return np.asarray(model.embed(texts, norm=True), dtype=np.float32)

    encode(["warm-up"])
    return MicroBatchingEmbedder(
        encode, WORDLLAMA_MODEL_ID, WORDLLAMA_DIMENSION, max_batch=max_batch
    )
