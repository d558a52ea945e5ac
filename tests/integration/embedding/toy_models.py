"""Loaders for the model-process tests: models that fail in ways the real one cannot be made to.

Fakes on purpose (the real model neither raises on input nor prints to stdout);
the process, the pipe and the restarts they exercise are real.
"""

from __future__ import annotations

import sys

import numpy as np

from recalld_server.domain.ports import Vectors
from recalld_server.embedding.model_process import EncodeFn


def raising_encoder() -> EncodeFn:
    """Encodes texts by length; raises for a text that says "boom"."""

    def encode(texts: list[str]) -> Vectors:
        if "boom" in texts:
            raise ValueError("cannot embed boom")
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    return encode


def chatty_encoder() -> EncodeFn:
    """Prints to stdout while loading and on every call, as some libraries do."""
    print("loading weights...")

    def encode(texts: list[str]) -> Vectors:
        print(f"encoding {len(texts)} texts")
        sys.stdout.flush()
        return np.ones((len(texts), 3), dtype=np.float32)

    return encode


def broken_loader() -> EncodeFn:
    """A model whose weights cannot be read."""
    raise RuntimeError("weights file is corrupt")
