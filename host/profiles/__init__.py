"""Login profiles: storageState snapshots per owner and profile, shared by every sandbox and server process.

Modules: paths (where a profile lives, and the checks made before a path is built), files (atomic
writes, modes), locks (login.lock and publish.lock as flock locks), store (state.json + meta.json,
versions, compare-and-set publish), publisher (debounced and periodic publishing of profile
sessions), sessions (opening a browser session from a profile: the seam other features use).
"""

from host.profiles.sessions import ProfileSessions
from host.profiles.store import ProfileStore

__all__ = ["ProfileSessions", "ProfileStore"]
