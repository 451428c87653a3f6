"""How the host reaches a sandbox's agent, outside JSON-RPC: the port it listens on inside the
container, and the environment it starts with (only its token's hash: every process started with
`docker exec`, the code runner included, inherits that environment and must not learn the token)."""

from __future__ import annotations

from rpc.auth import token_sha256
from rpc.settings import EnvSettings

AGENT_PORT = 8080
# The variables of agent_env that only the agent may read: where a backend cannot keep a container's
# environment private (a swarm service's spec shows it), they go into SandboxSettings.secrets_file instead.
HASH_VARS = frozenset({EnvSettings.env_name("token_sha256"), EnvSettings.env_name("runner_secret_sha256")})


def agent_env(
    token: str,
    runner_secret: str,
    *,
    expires_at: int | None = None,
    pooled: bool = False,
    browser_prelaunch: bool = False,
) -> dict[str, str]:
    """The container environment for an agent whose bearer token is `token` and whose code runner proves
    itself with `runner_secret` (only their hashes are in it; read by SandboxSettings); the agent exits
    on its own after `expires_at` (epoch seconds), when given. A `pooled` one (the warm pool's) accepts
    one claim that replaces the token (and its expiry); `browser_prelaunch` launches Chromium at start."""
    env = {
        EnvSettings.env_name("token_sha256"): token_sha256(token),
        EnvSettings.env_name("runner_secret_sha256"): token_sha256(runner_secret),
    }
    if expires_at is not None:
        env[EnvSettings.env_name("expires_at")] = str(expires_at)
    if pooled:
        env[EnvSettings.env_name("pooled")] = "true"
    if browser_prelaunch:
        env[EnvSettings.env_name("browser_prelaunch")] = "true"
    return env
