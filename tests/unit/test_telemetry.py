"""Which spans the tracer provider records, by the exporters configured."""

from __future__ import annotations

import json
from pathlib import Path

from recalld_server.telemetry.tracing import build_tracer_provider


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
