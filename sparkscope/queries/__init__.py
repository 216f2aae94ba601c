"""Read-only page queries, one module per page: `search`, `detail`, `compare`, `history`,
`dashboard`; `errors` (lookup errors, mapped to 404 / 409 by the views) and `cache` (a per-process
TTL cache of computed page parts).

Every function takes a Session and returns plain dataclasses (or ORM rows that are only read).
Names, labels and units for display live in `sparkscope.present`, not here.
"""
