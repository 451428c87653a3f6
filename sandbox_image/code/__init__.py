"""Code execution: the runner daemon (runs as user runner) and the agent's client that forwards to it."""
