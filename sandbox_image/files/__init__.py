"""Workspace file methods (file.read / file.write / file.list / file.delete), run in the agent as user `agent`."""

from __future__ import annotations

import asyncio

from rpc.deadline import Deadline
from rpc.methods import FILE_DELETE, FILE_LIST, FILE_READ, FILE_WRITE
from rpc.models import files as f
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.files.ops import delete_path, list_dir, read_file, write_file
from sandbox_image.files.workspace import Workspace

__all__ = ["Workspace", "register"]


def register(dispatcher: Dispatcher, workspace: Workspace) -> None:
    """Serve the file methods; the syscalls run in a worker thread so the event loop never blocks on disk."""

    async def read(params: f.FileReadParams, _deadline: Deadline) -> f.FileReadResult:
        return await asyncio.to_thread(read_file, workspace, params)

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
