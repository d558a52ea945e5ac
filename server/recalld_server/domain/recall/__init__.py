"""The recall use case: its two candidate sources, its filters, scoring and selection."""

from __future__ import annotations

from recalld_server.domain.recall.pipeline import RecallPipeline
from recalld_server.domain.recall.policy import RecallPolicy

__all__ = ["RecallPipeline", "RecallPolicy"]
