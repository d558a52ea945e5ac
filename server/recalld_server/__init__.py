"""recalld server: a gRPC long-term memory backend for AI agents."""

__version__ = "0.1.0"
