"""Workspace file methods (file.read / file.write / file.list / file.delete), run in the agent as user `agent`."""

from __future__ import annotations

import asyncio

from rpc.deadline import Deadline
from rpc.models import files as f
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.files.ops import delete_path, list_dir, open_read, write_file
from sandbox_image.files.workspace import Workspace

__all__ = ["Workspace", "register"]


def register(dispatcher: Dispatcher, workspace: Workspace) -> None:
    """Serve the file methods; bulk I/O runs in a worker thread so the event loop never waits on disk.

    A read opens its file on the loop (metadata only) and reads a small part (INLINE_READ_BYTES) there
    too: the thread hop would cost more than the read."""
    # Here, not at the top: the code runner imports this package (for Workspace) and must not load the
    # whole method table at start (rpc.runner_methods says why).
    from rpc.methods import FILE_DELETE, FILE_LIST, FILE_READ, FILE_WRITE

    async def read(params: f.FileReadParams, _deadline: Deadline) -> f.FileReadResult:
        opened = open_read(workspace, params)
        if opened.small:
            return opened.finish()
        try:
            return await asyncio.to_thread(opened.finish)
        except asyncio.CancelledError:
            opened.abandon()  # the worker may never have started: the fd must not leak
            raise

    async def write(params: f.FileWriteParams, _deadline: Deadline) -> f.FileWriteResult:
        return await asyncio.to_thread(write_file, workspace, params)

    async def list_(params: f.FileListParams, _deadline: Deadline) -> f.FileListResult:
        return await asyncio.to_thread(list_dir, workspace, params)

    async def delete(params: f.FileDeleteParams, _deadline: Deadline) -> f.FileDeleteResult:
        return await asyncio.to_thread(delete_path, workspace, params)

    dispatcher.register(FILE_READ, read)
    dispatcher.register(FILE_WRITE, write)
    dispatcher.register(FILE_LIST, list_)
    dispatcher.register(FILE_DELETE, delete)
