"""The History Server's REST answers rendered from a replay."""
