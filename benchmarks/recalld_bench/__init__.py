"""recalld benchmark harness: datasets, load generator, scenarios, reports, quality."""
