"""memorize."""
