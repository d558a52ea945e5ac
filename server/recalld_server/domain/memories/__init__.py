"""The memory use cases: write, update, forget, restore, confirm and resolve, read, consolidate."""
