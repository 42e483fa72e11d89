"""accord.replay."""
