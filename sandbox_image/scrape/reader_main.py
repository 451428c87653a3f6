"""The entry point every reader script (pdf_reader.py, feed_reader.py, sitemap_reader.py) shares: limits set
before the untrusted bytes are touched, the bytes from stdin, one JSON object to stdout, and any failure of the
parser reported as {"error": …} rather than raised. Stdlib only: a reader imports it from its own directory
(it is run by path, so that directory is first on sys.path), never the agent's packages."""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Callable
from typing import Any

MIB = 1024 * 1024


def serve(read: Callable[[bytes], dict[str, Any]], *, memory_bytes: int, cpu_seconds: int) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    data = sys.stdin.buffer.read()
    try:
        out = read(data)
    except MemoryError:
        out = {"error": f"reading it needs more than {memory_bytes // MIB} MiB of memory"}
    except Exception as exc:  # any parser failure is the document's: reported, not raised
        out = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    sys.stdout.write(json.dumps(out))
    return 0
