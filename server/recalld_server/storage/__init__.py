"""Storage adapters behind the domain's ports."""
