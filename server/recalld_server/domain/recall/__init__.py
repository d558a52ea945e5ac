"""The recall use case and its two candidate sources (the working set and storage)."""
