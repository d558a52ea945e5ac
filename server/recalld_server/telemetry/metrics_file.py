"""Metrics appended to a JSON Lines file (RECALLD_OTEL_METRICS_FILE), one point a line.

Beside the OTLP and console exporters, for local debugging and for benchmarks
that read each replica's counters without a collector. Points are written every
OTEL_METRIC_EXPORT_INTERVAL milliseconds (the standard variable; 60 s by default)
and when the server stops.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Histogram,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    Sum,
)


class JsonLinesMetricExporter(MetricExporter):
    """Writes every data point of an export as one JSON object per line."""

    def __init__(self, path: Path) -> None:
        super().__init__(preferred_temporality={}, preferred_aggregation={})
        self._path = path
        self._lock = threading.Lock()

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Appends the points."""
        lines: list[str] = []
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    lines.extend(json.dumps(p) for p in _points(metric.name, metric.data))
        if lines:
            with self._lock, self._path.open("a", encoding="utf-8") as out:
                out.write("\n".join(lines) + "\n")
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Nothing is buffered."""
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Nothing to release."""


def _points(name: str, data: Any) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    for point in data.data_points:
        row: dict[str, Any] = {
            "name": name,
            "time_ns": point.time_unix_nano,
            "attributes": dict(point.attributes or {}),
        }
        if isinstance(data, Histogram):
            row.update(count=point.count, sum=point.sum, min=point.min, max=point.max)
        elif isinstance(data, (Sum, Gauge)):
            row["value"] = point.value
            if isinstance(data, Sum):
                row["cumulative"] = data.aggregation_temporality == (
                    AggregationTemporality.CUMULATIVE
                )
        points.append(row)
    return points
