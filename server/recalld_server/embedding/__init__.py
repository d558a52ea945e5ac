"""Embedding adapters behind the domain's Embedder port."""
