"""Small builders shared by the end-to-end tests."""

from __future__ import annotations

from typing import Any

from recalld.v1 import memory_pb2


def memory(
    content: str, memory_type: int = memory_pb2.MEMORY_TYPE_FACT, **fields: Any
) -> memory_pb2.Memory:
    """A Memory message to write."""
    return memory_pb2.Memory(content=content, type=memory_type, **fields)  # type: ignore[arg-type]
