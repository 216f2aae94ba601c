"""Stored rows -> heuristic inputs -> the registry -> stored results."""
