"""gRPC edge: translates proto to domain and back; holds no business rules."""
