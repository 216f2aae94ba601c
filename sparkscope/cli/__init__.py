"""The `sparkscope` command: one module per command family."""
