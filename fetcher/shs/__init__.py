"""The Spark History Server source: REST paths, the HTTP client, and recordings (dump and replay)."""
