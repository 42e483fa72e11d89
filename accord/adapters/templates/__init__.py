"""accord.adapters.templates."""
