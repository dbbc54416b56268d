"""integrate."""
