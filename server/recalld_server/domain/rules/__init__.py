"""The pure lifecycle rules: duplicates, conflicts, core-memory constraints, the pair judge."""
