"""File names as bytes on disk and as text on the wire.

Linux names are bytes; Python hands undecodable bytes over as lone surrogates (surrogateescape),
which are not valid JSON text. Outgoing paths are therefore split in two: a printable form (bytes
that are not UTF-8 shown as `\\xNN`) and, only when needed, the exact bytes in base64. Incoming
paths are text, or with `pathEncoding: "base64"` the exact bytes, turned back into the same
surrogateescape string every os call here accepts.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import TypedDict

from rpc.errors import invalid_parameter
from rpc.models.files import PathParams


def fs_path(params: PathParams) -> str:
    """The path to walk, as os functions take it."""
    if params.pathEncoding == "utf-8":
        return params.path
    try:
        raw = base64.b64decode("".join(params.path.split()), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if not raw:
        raise invalid_parameter(
            "path",
            "invalid base64",
            message="path is not valid base64 (pathEncoding is 'base64')",
            hint="pass the pathBase64 a listing reported, or use pathEncoding 'utf-8' for a text path",
        )
    return os.fsdecode(raw)


def is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(name: str) -> str:
    return name if is_text(name) else os.fsencode(name).decode("utf-8", "backslashreplace")


def raw_base64(name: str) -> str | None:
    """The exact bytes, only for names that are not valid UTF-8."""
    return None if is_text(name) else base64.b64encode(os.fsencode(name)).decode("ascii")


class WirePath(TypedDict):
    path: str
    pathBase64: str | None


def wire_path(rel: str) -> WirePath:
    """`path` and `pathBase64` of a result."""
    return WirePath(path=printable(rel), pathBase64=raw_base64(rel))
