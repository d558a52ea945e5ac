"""OpenTelemetry wiring (traces and metrics at the edges)."""
