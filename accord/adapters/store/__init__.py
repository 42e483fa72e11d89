"""accord.adapters.store."""
