"""mining."""
