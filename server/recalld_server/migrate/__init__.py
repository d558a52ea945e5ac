"""Migration in and out of recalld: `recalld import` and `recalld export`.

* `memory_md`, `sqlite_layouts`, `jsonl`: pure parsers from a source file to
  `records.ParseResult` (records to write, records skipped with a reason).
* `importing`: the gRPC side of an import, in steps: `import_plan` (pure: split
  content, cut batches), `batch_writing` (Writes with deterministic request
  ids), `closing` (archiving what the source had closed), `import_report` (the
  zero-loss check).
* `exporting`: JSONL export through List.
* `commands`: the command-line flags and exit codes.

Formats, mappings and the zero-loss rule are described in docs/migration.md.
"""
