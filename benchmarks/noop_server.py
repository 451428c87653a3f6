"""The floor under any tool's overhead: an MCP server (the official SDK, stdio) whose one tool does
nothing. benchmarks/bench.py (`fast_path`) times a round trip to it next to file_read."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("noop")


@server.tool()
def noop() -> str:
    """Does nothing."""
    return "ok"


if __name__ == "__main__":
    server.run()
