"""Time-ordered memory ids (ULID: 48-bit millisecond time + 80 random bits, Crockford base32)."""

from __future__ import annotations

import os

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_LENGTH = 26


def new_id(now_ms: int) -> str:
    """A 26-character id that sorts by creation time."""
    value = (now_ms & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(ID_LENGTH):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def looks_like_id(value: str) -> bool:
    """Cheap syntactic check, so that garbage ids are rejected before any storage call."""
    return len(value) == ID_LENGTH and all(c in _ALPHABET for c in value)
