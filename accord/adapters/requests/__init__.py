"""accord.adapters.requests."""
