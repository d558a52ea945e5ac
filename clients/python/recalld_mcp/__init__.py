"""recalld as memory for any MCP agent: an MCP server that is a client of recalld.

`recalld-mcp` (or `recalld mcp`) serves the tools, resources and prompt of
`recalld_mcp.server.build_server` over stdio or streamable HTTP; each tool call
is one RPC to a running recalld, with the caller's key, for the user the
operator bound (`recalld_mcp.identity`). docs/mcp.md is the guide. Needs the
`mcp` extra: `pip install 'recalld-client[mcp]'`.
"""
