"""Configuration: one settings table, strict parsing, and the loader."""
