"""The memory use cases: write, update, forget, restore, confirm and resolve, read, consolidate."""

from __future__ import annotations

from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService

__all__ = ["Consolidator", "MemoryService", "Policy"]
