"""Boxwright's wire contract: the JSON-RPC envelope, method table, models, errors, deadlines, and what
else host and container agree on (the agent's port and environment, settings names, bearer tokens).

Both the host and the in-container agent import this package; nothing that crosses between them is
described anywhere else. Import the modules themselves (`rpc.methods`, `rpc.errors`, …).
"""
