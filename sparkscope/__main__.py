"""`python -m sparkscope` runs the CLI."""

from sparkscope.cli.main import main

main()
