"""Finding event logs (local folders or fsspec URLs), their layouts and codecs, read line by line."""
