"""The built-in heuristics, one module per check, found by the registry like any plugin."""
