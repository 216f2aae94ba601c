"""History Server JSON -> plain row dicts, one per table (pure: no I/O, no database).

Parsing is tolerant the way an SHS client must be: unknown fields are ignored, fields that older
Spark versions lack get defaults, and only a body of the wrong shape (say, an object where a list
belongs) is an error. Secrets in properties are redacted here, before anything is stored.
"""
