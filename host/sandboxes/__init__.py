"""Sandbox lifecycle: the manager, its records, and ownership locks."""
