"""accord.engine."""
