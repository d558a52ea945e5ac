"""Migration in and out of recalld: `recalld import` and `recalld export`.

* `memory_md`, `sqlite_layouts`, `jsonl`: pure parsers from a source file to
  `records.ParseResult` (records to write, records skipped with a reason).
* `runner`: the gRPC side (batched Writes with deterministic request ids,
  archiving what the source had closed, JSONL export through List).
* `commands`: the command-line flags and exit codes.

Formats, mappings and the zero-loss rule are described in docs/migration.md.
"""
