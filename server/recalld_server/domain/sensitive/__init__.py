"""Sensitive data in what agents send: found (detection), then masked, refused or kept (policy)."""
