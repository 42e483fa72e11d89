"""accord.engine.local."""
