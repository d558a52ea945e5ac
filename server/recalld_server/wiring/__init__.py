"""The composition root: builds every adapter from a ServerConfig and starts the server.

It hands the adapters to the domain's use cases and serves them over gRPC. Nothing
else in the server constructs an adapter.
"""
