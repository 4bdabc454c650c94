"""Bearer tokens and shared secrets: generated once, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import secrets


def new_token() -> str:
    """A fresh URL-safe token with 256 bits of entropy."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> bytes:
    """What the database stores and looks tokens up by."""
    return hashlib.sha256(token.encode()).digest()
