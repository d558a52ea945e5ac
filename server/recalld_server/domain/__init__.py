"""Domain layer: memory rules and use cases. Knows no protobuf and no storage engine."""
