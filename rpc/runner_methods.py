"""The methods the agent forwards to the code runner daemon (a process of its own, as user runner).

Kept apart from the whole table (rpc.methods, which lists them too) because every sandbox start waits
for the runner to boot: importing the browser, template and scrape models it never serves cost it
~25 ms of CPU on the start's two busy cores (issue 12)."""

from __future__ import annotations

from rpc.method import Method
from rpc.models import code as c

CODE_RUN = Method("code.run", c.CodeRunParams, c.CodeRunResult)
PROCESS_LIST = Method("process.list", c.ProcessListParams, c.ProcessListResult, 5_000)
PROCESS_OUTPUT = Method("process.output", c.ProcessOutputParams, c.ProcessOutputResult)
PROCESS_KILL = Method("process.kill", c.ProcessKillParams, c.ProcessKillResult, 10_000)

RUNNER_METHODS = frozenset({CODE_RUN.name, PROCESS_LIST.name, PROCESS_OUTPUT.name, PROCESS_KILL.name})
