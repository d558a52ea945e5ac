"""`python -m recalld_mcp`."""

from recalld_mcp.cli import console

console()
