"""accord.adapters."""
