"""Tool definitions, one module per capability."""
