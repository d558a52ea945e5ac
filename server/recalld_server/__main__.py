"""`python -m recalld_server` runs the CLI."""

from recalld_server.cli import main

main()
