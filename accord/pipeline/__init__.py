"""accord.pipeline."""
