"""Bearer-token check against the token's SHA-256 (the token itself never enters the container)."""

from __future__ import annotations

import hashlib
import hmac


class TokenAuth:
    """Accepts `Authorization: Bearer <token>` when sha256(token) equals the configured hash."""

    def __init__(self, token_sha256_hex: str) -> None:
        self._expected = bytes.fromhex(token_sha256_hex)
        if len(self._expected) != hashlib.sha256().digest_size:
            raise ValueError("token hash must be a SHA-256 digest (64 hex digits)")

    def check(self, authorization: str | None) -> bool:
        """Constant-time comparison of the presented token's hash with the expected one."""
        if not authorization:
            return False
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return False
        try:
            presented = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(presented, self._expected)
