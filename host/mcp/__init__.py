"""The MCP face of Boxwright: tool registry, result/error translation, transports and auth."""
