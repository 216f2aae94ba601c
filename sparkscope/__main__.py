"""`python -m sparkscope` runs the CLI."""

from sparkscope.cli import main

main()
