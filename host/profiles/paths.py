"""Where a profile lives: `<snapshot root>/<owner>/<profileId>/`, and the checks made before any such
path is built (seed 004 §2.5.4, TC-15).

The owner and the profile id are checked as strings first — pattern, no separators, no '..' — so a
bad id never reaches the filesystem, not even as a failed `stat`. Only then is the path built, and
its resolved form must still sit directly under the owner's directory under the root.
"""

from __future__ import annotations

import re
from pathlib import Path

from host.mcp.auth import OWNER_PATTERN
from rpc.errors import invalid_parameter
from rpc.models.profiles import profile_id_problem

PROFILE_ID_HINT = "use letters, digits, '.', '_' and '-' (at most 64), e.g. 'master' or 'work-github'"


def check_profile_id(profile_id: str, pattern: str) -> str:
    problem = profile_id_problem(profile_id, pattern)
    if problem is not None:
        raise invalid_parameter("profileId", problem, message=f"invalid profileId: {problem}", hint=PROFILE_ID_HINT)
    return profile_id


def check_owner(owner: str) -> str:
    if not re.fullmatch(OWNER_PATTERN, owner) or ".." in owner:
        raise invalid_parameter("owner", f"must match {OWNER_PATTERN}", message="invalid owner name")
    return owner


class ProfilePaths:
    def __init__(self, root: Path, pattern: str) -> None:
        self.root = root
        self.pattern = pattern

    def owner_dir(self, owner: str) -> Path:
        check_owner(owner)
        path = self.root / owner
        if path.resolve().parent != self.root.resolve():
            raise invalid_parameter("owner", "resolves outside the snapshot root", message="invalid owner name")
        return path

    def profile_dir(self, owner: str, profile_id: str) -> Path:
        check_profile_id(profile_id, self.pattern)
        owner_dir = self.owner_dir(owner)
        path = owner_dir / profile_id
        if path.resolve().parent != owner_dir.resolve():
            raise invalid_parameter(
                "profileId", "resolves outside the owner's profiles", message="invalid profileId", hint=PROFILE_ID_HINT
            )
        return path
