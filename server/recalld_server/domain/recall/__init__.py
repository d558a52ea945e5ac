"""The recall use case and its two candidate sources (the working set and storage)."""

from __future__ import annotations

from recalld_server.domain.recall.pipeline import RecallPipeline, RecallPolicy

__all__ = ["RecallPipeline", "RecallPolicy"]
