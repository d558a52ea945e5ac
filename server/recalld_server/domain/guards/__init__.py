"""What is checked before any rule runs: request shape, the caller, rates, page tokens."""
