"""A sandbox started by testcontainers, hardened like the ones the MCP server starts, driven by a
typed synchronous JSON-RPC client. Needs `TESTCONTAINERS_RYUK_DISABLED=true` where the Ryuk
image cannot be pulled (air-gapped machines)."""

from __future__ import annotations

import itertools
import secrets
import time
from typing import Any, Self

import docker.errors
import httpx
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import HttpWaitStrategy

from host import labels
from host.agent_client import AgentEndpoint, read_answer
from host.backends.hardening import RUNNER_UID, SANDBOX_GID, Limits, hardened
from host.backends.runner import start_code_runner
from host.config import DEFAULT_IMAGE, size_bytes
from rpc import methods
from rpc.agent import AGENT_PORT, agent_env
from rpc.deadline import LADDER
from rpc.envelope import encode_request
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import Method, P, R
from rpc.models import files as f
from rpc.models.code import CodeRunParams, CodeRunResult
from rpc.models.sandbox import Health

DEFAULT_TTL_S = 3600


class BoxwrightContainer(DockerContainer):
    """`ttl_s`: the sandbox ends itself that long after it is made, as the server's do — a test process
    killed inside `with` (no Ryuk where it cannot be pulled) leaves no container running for ever."""

    def __init__(
        self, image: str = DEFAULT_IMAGE, *, mem_limit: str = "2g", ttl_s: int = DEFAULT_TTL_S, **kwargs: Any
    ) -> None:
        super().__init__(image, **kwargs)
        self.token = secrets.token_urlsafe(32)
        self._runner_secret = secrets.token_urlsafe(32)
        self.expires_at = int(time.time()) + ttl_s
        for name, value in agent_env(self.token, self._runner_secret, expires_at=self.expires_at).items():
            self.with_env(name, value)
        # Hardened like the sandboxes the server starts; testcontainers passes ports and tmpfs itself.
        # Its scratch mounts and its tmpfs workspace hold at most half its memory (as Settings requires of
        # the server's sandboxes): an eighth for the workspace, a sixteenth for each of the four others.
        sixteenth = size_bytes(mem_limit) // 16
        run = hardened(Limits(mem_limit, pids_limit=512, shm_size=str(sixteenth), tmp_size=str(sixteenth)))
        self.ports.update(run.pop("ports"))
        self.tmpfs.update(run.pop("tmpfs"))
        # No named volume here: the workspace is a tmpfs shaped like the image's /workspace.
        self.tmpfs["/workspace"] = (
            f"rw,exec,nosuid,nodev,size={4 * sixteenth},uid={RUNNER_UID},gid={SANDBOX_GID},mode=2775"
        )
        self.with_kwargs(**run, labels={labels.PREFIX + "testcontainer": "1"})
        self.waiting_for(HttpWaitStrategy(AGENT_PORT, "/healthz").for_status_code(200))
        self._http: httpx.Client | None = None
        self._ids = itertools.count(1)

    def start(self) -> Self:
        try:  # testcontainers would try to pull it, and no registry may be reachable
            self.get_docker_client().client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise BoxwrightError(
                ErrorCode.IMAGE_NOT_FOUND, f"sandbox image {self.image} is not built", details={"image": self.image}
            ) from None
        super().start()
        container = self.get_wrapped_container()
        start_code_runner(container.client.api, container.id or "", self._runner_secret)
        deadline = time.monotonic() + 30
        while not self.health().codeRunnerReady:
            if time.monotonic() > deadline:
                raise BoxwrightError(ErrorCode.SANDBOX_START_TIMEOUT, "the code runner did not come up")
            time.sleep(0.05)
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None
        super().stop(force=force, delete_volume=delete_volume)

    def get_container_host_ip(self) -> str:
        """The agent port is published on the engine host's loopback only (never beyond it), so this
        needs a local engine; testcontainers' gateway/bridge guesses would not reach it."""
        return "127.0.0.1"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.get_exposed_port(AGENT_PORT)}"

    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(base_url=self.base_url, trust_env=False, timeout=None)
        return self._http

    def health(self) -> Health:
        return Health.model_validate(self.http.get("/healthz", timeout=5).json())

    def call(self, method: Method[P, R], params: P, *, timeout_s: float | None = None) -> R:
        """One typed RPC; errors raise BoxwrightError with the agent's errorCode."""
        budget_ms = int(timeout_s * 1000) if timeout_s else LADDER.agent_budget_ms(method, params)
        body = encode_request(method, params, deadline_ms=budget_ms, request_id=next(self._ids))
        headers = AgentEndpoint(self.base_url, self.token).headers
        try:
            resp = self.http.post("/rpc", content=body, headers=headers, timeout=budget_ms / 1000 + LADDER.transport_s)
        except httpx.TimeoutException as exc:
            raise BoxwrightError(ErrorCode.RPC_TIMEOUT, f"{method.name} did not answer in time") from exc
        return read_answer(method, resp.status_code, resp.content)

    # Conveniences for the common calls.
    def run_code(self, code: str, language: str = "python", **kwargs: Any) -> CodeRunResult:
        return self.call(methods.CODE_RUN, CodeRunParams(language=language, code=code, **kwargs))  # type: ignore[arg-type]

    def write_file(self, path: str, content: str, **kwargs: Any) -> f.FileWriteResult:
        return self.call(methods.FILE_WRITE, f.FileWriteParams(path=path, content=content, **kwargs))

    def read_file(self, path: str, **kwargs: Any) -> f.FileReadResult:
        return self.call(methods.FILE_READ, f.FileReadParams(path=path, **kwargs))

    def list_files(self, path: str = ".", **kwargs: Any) -> f.FileListResult:
        return self.call(methods.FILE_LIST, f.FileListParams(path=path, **kwargs))
