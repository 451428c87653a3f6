"""The one exception type the image pipeline raises.

A ``BoxwrightError`` (``rpc.errors``) with the image codes, so the CLI prints message + hint and
the MCP layer translates it like any other error; ``ImageBuildError`` lets callers that only care
about image problems catch just those.
"""

from __future__ import annotations

from rpc.errors import BoxwrightError, ErrorCode

IMAGE_BUILD_FAILED = ErrorCode.IMAGE_BUILD_FAILED
IMAGE_NOT_FOUND = ErrorCode.IMAGE_NOT_FOUND


class ImageBuildError(BoxwrightError):
    """Building, finding or preparing the sandbox image failed; ``hint`` says what to do."""
