"""Replay of listener events into the History Server's status store (AppStatusListener)."""
