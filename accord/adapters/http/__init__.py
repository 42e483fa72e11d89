"""accord.adapters.http."""
