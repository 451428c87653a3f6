"""Bearer tokens as both HTTP faces read them: the MCP server (a token per owner) and each sandbox's
agent (a token per sandbox). Only SHA-256 digests are ever stored — on the host's token file and in
the sandbox's environment — so this is where a token becomes its digest, for both sides."""

from __future__ import annotations

import hashlib
import re

# `Bearer` SP token — one token (no spaces or commas), nothing before or after it (RFC 6750 allows only
# token68 characters; any other non-space character is let through to fail the lookup instead).
_BEARER = re.compile(r"^[Bb][Ee][Aa][Rr][Ee][Rr] +([^\s,]+) *$")


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None for any other (or malformed) header."""
    found = _BEARER.match(authorization or "")
    return found.group(1) if found else None


def token_sha256(token: str) -> str:
    """The hex SHA-256 of a token: what is stored and compared instead of the token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
