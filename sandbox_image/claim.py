"""sandbox.claim: a sandbox started for the host's warm pool is handed to its first user (and
sandbox.extend: the host moved a sandbox's expiry, which the agent enforces itself).

A pooled sandbox boots with a token only the server knows (the pool's). Claiming it swaps that token
for the new owner's, once: afterwards the pool's token is refused, and a second claim too. The agent
also checks that the sandbox is as it was started — no call but sandbox.info served, an empty
workspace — so a sandbox that ever served anyone can never be handed out as fresh.
"""

from __future__ import annotations

import os

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import SANDBOX_ACTIVITY, SANDBOX_CLAIM, SANDBOX_EXTEND, SANDBOX_INFO
from rpc.models.sandbox import SandboxClaimParams, SandboxClaimResult, SandboxExtendParams, SandboxExtendResult
from sandbox_image import lifetime
from sandbox_image.auth import TokenAuth
from sandbox_image.code.client import RunnerLink
from sandbox_image.dispatcher import Dispatcher

# Calls a pooled sandbox may have served before its claim: the server's own checks.
HOUSEKEEPING = frozenset({SANDBOX_INFO.name, SANDBOX_CLAIM.name, SANDBOX_ACTIVITY.name, SANDBOX_EXTEND.name})
REFUSED_HINT = "the sandbox cannot be claimed: the server removes it and hands out another one"


def register(dispatcher: Dispatcher, *, auth: TokenAuth, pooled: bool, workspace: str, runner: RunnerLink) -> None:
    claimed = not pooled  # a sandbox started for one owner has nothing to claim

    def refuse(why: str) -> BoxwrightError:
        return BoxwrightError(ErrorCode.INVALID_REQUEST, f"sandbox.claim refused: {why}", hint=REFUSED_HINT)

    async def claim(params: SandboxClaimParams, _deadline: Deadline) -> SandboxClaimResult:
        nonlocal claimed
        if claimed:
            raise refuse("this sandbox is not a pooled one waiting for its claim")
        if any(n for m, n in dispatcher.served.items() if m not in HOUSEKEEPING):
            raise refuse("it has served calls")
        with os.scandir(workspace) as entries:
            if any(True for _ in entries):
                raise refuse("its workspace is not empty")
        claimed = True  # before any await: two concurrent claims cannot both pass
        auth.replace(params.tokenSha256)
        lifetime.move_expiry(params.expiresAt)
        return SandboxClaimResult(claimed=True, codeRunnerReady=runner.ready)

    async def extend(params: SandboxExtendParams, _deadline: Deadline) -> SandboxExtendResult:
        lifetime.move_expiry(params.expiresAt)
        return SandboxExtendResult(expiresAt=params.expiresAt)

    dispatcher.register(SANDBOX_CLAIM, claim)
    dispatcher.register(SANDBOX_EXTEND, extend)
