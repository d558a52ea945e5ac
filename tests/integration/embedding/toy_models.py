"""Loaders for the model-process tests: models that fail in ways the real one cannot be made to.

Fakes on purpose (the real model neither raises on input nor prints to stdout);
the process, the pipe and the restarts they exercise are real.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from recalld_server.domain.core.ports import Vectors
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


def hanging_encoder() -> EncodeFn:
    """Never answers for a text that says "hang"."""

    def encode(texts: list[str]) -> Vectors:
        if "hang" in texts:
            time.sleep(3600)
        return np.zeros((len(texts), 2), dtype=np.float32)

    return encode


def dying_encoder() -> EncodeFn:
    """Exits the process for a text that says "die", as a crash in native code would."""

    def encode(texts: list[str]) -> Vectors:
        if "die" in texts:
            os._exit(3)
        return np.zeros((len(texts), 2), dtype=np.float32)

    return encode


KILL_SWITCH_ENV = "RECALLD_TEST_MODEL_KILL_SWITCH"
"""Names a file: while it exists, the model's process exits on every call."""


def usem3_with_kill_switch() -> EncodeFn:
    """The real model, except that its process exits on a call while the kill switch exists."""
    from pathlib import Path

    from recalld_server.embedding.usem import usem3_encoder

    real = usem3_encoder()
    switch = Path(os.environ[KILL_SWITCH_ENV])

    def encode(texts: list[str]) -> Vectors:
        if switch.exists():
            os._exit(3)
        return real(texts)

    return encode
