"""Everything of Boxwright that runs on the host: MCP server, sandbox manager, Docker backend."""

__version__ = "0.1.0"
