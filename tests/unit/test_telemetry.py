"""Which spans and metric points the providers record, by the exporters configured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recalld_server.telemetry.tracing import build_meter_provider, build_tracer_provider


def test_spans_are_not_recorded_when_nothing_exports_them() -> None:
    provider = build_tracer_provider({})
    with provider.get_tracer("t").start_as_current_span("recall.embed") as span:
        assert not span.is_recording()
    provider.shutdown()


def test_spans_are_recorded_and_written_when_a_file_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    provider = build_tracer_provider({"RECALLD_OTEL_TRACES_FILE": str(path)})
    with provider.get_tracer("t").start_as_current_span("recall.embed") as span:
        assert span.is_recording()
        span.set_attribute("recalld.cache_hit", True)
    provider.shutdown()
    [line] = path.read_text().splitlines()
    written = json.loads(line)
    assert written["name"] == "recall.embed"
    assert written["attributes"] == {"recalld.cache_hit": True}


def test_metric_points_are_written_when_a_file_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    provider = build_meter_provider({"RECALLD_OTEL_METRICS_FILE": str(path)})
    meter = provider.get_meter("t")
    meter.create_counter("recalld.things").add(3, {"kind": "a"})
    meter.create_histogram("recalld.recall.stage.duration").record(2.5, {"stage": "embed"})
    provider.shutdown()  # the last export happens on shutdown
    points = {p["name"]: p for p in map(json.loads, path.read_text().splitlines())}
    assert points["recalld.things"]["value"] == 3
    assert points["recalld.things"]["attributes"] == {"kind": "a"}
    assert points["recalld.things"]["cumulative"] is True
    histogram = points["recalld.recall.stage.duration"]
    assert (histogram["count"], histogram["sum"]) == (1, 2.5)


@pytest.mark.parametrize("interval", ["soon", "0", "-5", "inf", "nan"])
def test_a_bad_metric_export_interval_stops_start_up(tmp_path: Path, interval: str) -> None:
    with pytest.raises(SystemExit, match="OTEL_METRIC_EXPORT_INTERVAL"):
        build_meter_provider(
            {
                "RECALLD_OTEL_METRICS_FILE": str(tmp_path / "m.jsonl"),
                "OTEL_METRIC_EXPORT_INTERVAL": interval,
            }
        )
