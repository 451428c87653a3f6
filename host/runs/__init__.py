"""Template runs on the host (seed 000's RunManager and ArtifactStore; the steps run in the sandbox agent,
see docs/tasks.md).

Modules: manager (RunManager: owned runs, checks, queue, cancel, sync waits, retention, the restart
rule), driver (one run in its sandbox: task.start, long-poll, host backstop, artifact copy, job
sandbox release), live (a run in flight: what only memory holds), records (the stored record and
its MCP views), store (run records and artifact bytes under the state directory: atomic writes,
700/600, a liveness lock per run in flight), artifacts (ArtifactStore: owned, chunked, expiring),
queue (the global maxConcurrentRuns slots, shared fairly between owners). Throw-away sandboxes come from
host.sandboxes.jobs.
"""
