"""accord.events."""
