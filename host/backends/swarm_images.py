"""Copy the sandbox image onto swarm nodes that lack it (no registry may be reachable).

One `docker save` stream from a source engine is fed to a `docker load` on every target engine at
the same time: the loads unpack while the save is still producing, and no tar file touches the
disk. Used by `boxwright image push-nodes` and by the swarm test fixture.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping

import docker
import docker.errors

from rpc.errors import BoxwrightError, ErrorCode

CHUNK = 1 << 20
QUEUE_CHUNKS = 64  # per target: at most 64 MiB buffered before the save waits for a slow load
LOAD_TIMEOUT_S = 1800

Progress = Callable[[str], None]


class ByteProgress:
    """A progress line at every 25 % of a byte count."""

    def __init__(self, out: Progress, what: str, total: int) -> None:
        self.out, self.what, self.total = out, what, max(1, total)
        self.done, self.next = 0, 0
        self.started = time.monotonic()

    def add(self, n: int) -> None:
        self.done += n
        pct = min(100, self.done * 100 // self.total)
        if pct >= self.next:
            self.out(f"{self.what}: {pct}% of {self.total >> 20} MiB ({time.monotonic() - self.started:.1f}s)")
            self.next = pct - pct % 25 + 25


def missing_on(image_id: str, image: str, targets: Mapping[str, docker.DockerClient]) -> list[str]:
    """The targets whose engine has no `image` tag pointing at `image_id`."""
    missing = []
    for name, client in targets.items():
        try:
            if client.images.get(image).id != image_id:
                missing.append(name)
        except docker.errors.ImageNotFound:
            missing.append(name)
    return missing


def push_image(
    source: docker.DockerClient,
    targets: Mapping[str, docker.DockerClient],
    image: str,
    progress: Progress = lambda _msg: None,
) -> list[str]:
    """Load `image` from `source` onto every target lacking it; returns the names it was loaded on.

    Raises IMAGE_NOT_FOUND when the source lacks the image, SANDBOX_START_FAILED when a load fails.
    """
    try:
        img = source.images.get(image)
    except docker.errors.ImageNotFound as exc:
        raise BoxwrightError(ErrorCode.IMAGE_NOT_FOUND, f"image {image} is not on the source engine") from exc
    need = missing_on(img.id or "", image, targets)
    if not need:
        progress(f"{image} is already on every node")
        return []
    report = ByteProgress(progress, f"sending {image} to {', '.join(need)}", int(img.attrs.get("Size") or 0))
    queues: dict[str, queue.Queue[bytes | None]] = {n: queue.Queue(maxsize=QUEUE_CHUNKS) for n in need}
    errors: list[str] = []
    failed = threading.Event()

    def feed(q: queue.Queue[bytes | None]) -> Iterator[bytes]:
        while (chunk := q.get()) is not None:
            yield chunk

    def load(name: str) -> None:
        q = queues[name]
        try:
            for line in targets[name].api.load_image(feed(q), quiet=True):
                if isinstance(line, dict) and line.get("error"):
                    errors.append(f"{name}: {line['error']}")
        except docker.errors.DockerException as exc:
            errors.append(f"{name}: {exc}")
        finally:
            if errors:
                failed.set()
            with contextlib.suppress(queue.Empty):  # never leave the saver blocked on a full queue
                while True:
                    q.get_nowait()

    threads = [threading.Thread(target=load, args=(n,), daemon=True, name=f"load-{n}") for n in need]
    for th in threads:
        th.start()
    try:
        for chunk in source.api.get_image(image, chunk_size=CHUNK):
            report.add(len(chunk))
            for q in queues.values():
                while not failed.is_set():
                    try:
                        q.put(chunk, timeout=0.5)
                        break
                    except queue.Full:
                        continue
            if failed.is_set():
                break
    finally:
        for q in queues.values():
            with contextlib.suppress(queue.Full):
                q.put(None, timeout=5)
        for th in threads:
            th.join(timeout=LOAD_TIMEOUT_S)
    errors += [f"{n}: loaded image differs" for n in missing_on(img.id or "", image, {n: targets[n] for n in need})]
    if errors:
        raise BoxwrightError(
            ErrorCode.SANDBOX_START_FAILED,
            f"loading {image} onto swarm nodes failed",
            details={"errors": sorted(set(errors))[:10]},
        )
    return need
