"""The recall stages as something observable, without the domain knowing OpenTelemetry.

The pipeline wraps each stage in `stages.stage(name)`; the telemetry adapter turns
that into a span and a latency measurement. Tests and tools use NullStages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

AttributeValue = str | int | float | bool


class StageRecord(Protocol):
    """What a stage may say about itself while it runs."""

    def set(self, name: str, value: AttributeValue) -> None:
        """Records one attribute (candidates in/out, cache hit, degraded)."""
        ...


class Stages(Protocol):
    """Observes pipeline stages."""

    def stage(self, name: str) -> contextlib.AbstractContextManager[StageRecord]:
        """Marks the duration of one stage."""
        ...


class _NullRecord:
    def set(self, name: str, value: AttributeValue) -> None:
        return None


class NullStages:
    """Observes nothing."""

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[StageRecord]:
        """A stage nobody watches."""
        yield _NullRecord()
