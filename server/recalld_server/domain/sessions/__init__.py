"""The session use cases: append, context, end, reads, and the extraction they drive."""
