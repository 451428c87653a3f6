"""Bearer-token check against the token's SHA-256 (the token itself never enters the container)."""

from __future__ import annotations

import hmac

from rpc.auth import bearer_token, token_sha256

_SHA256_HEX_DIGITS = 64


def _digest(token_sha256_hex: str) -> str:
    expected = token_sha256_hex.lower()
    if len(expected) != _SHA256_HEX_DIGITS or not all(c in "0123456789abcdef" for c in expected):
        raise ValueError("token hash must be a SHA-256 digest (64 hex digits)")
    return expected


class TokenAuth:
    """Accepts `Authorization: Bearer <token>` when sha256(token) equals the configured hash."""

    def __init__(self, token_sha256_hex: str) -> None:
        self._expected = _digest(token_sha256_hex)

    def replace(self, token_sha256_hex: str) -> None:
        """From now on accept only the token whose hash this is (a pooled sandbox's claim)."""
        self._expected = _digest(token_sha256_hex)

    def check(self, authorization: str | None) -> bool:
        """Constant-time comparison of the presented token's hash with the expected one."""
        token = bearer_token(authorization)
        return token is not None and hmac.compare_digest(token_sha256(token), self._expected)
