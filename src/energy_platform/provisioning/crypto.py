"""Secrets: homebase secrets encrypted at rest, cluster secrets kept only as SHA-256.

A homebase secret must be handed to its cluster, so it is stored encrypted (AES-256-GCM, the key
from settings, the SN as associated data so a ciphertext copied to another row does not decrypt).
A cluster secret only has to be recognised, so only its SHA-256 is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from energy_platform.core.errors import ConfigurationError, PlatformError

HOMEBASE_SECRET_BYTES = 256
CLUSTER_SECRET_BYTES = 32
_FORMAT = b"\x01"  # leaves room for a key rotation scheme without guessing at old rows
_NONCE_BYTES = 12


class SecretKey:
    """The key that encrypts homebase secrets; never printed, never logged."""

    def __init__(self, hex_key: str) -> None:
        try:
            key = bytes.fromhex(hex_key)
        except ValueError:
            key = b""
        if len(key) != 32:
            raise ConfigurationError(
                "EP_PROVISIONING_SECRET_KEY must be 64 hex characters (a 256-bit key);"
                " `scripts/local-stack.sh env` prints one for development"
            )
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "SecretKey(...)"

    def encrypt(self, sn: str, secret: bytes) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return _FORMAT + nonce + self._aead.encrypt(nonce, secret, sn.encode())

    def decrypt(self, sn: str, stored: bytes) -> bytes:
        if stored[:1] != _FORMAT:
            raise PlatformError(f"homebase {sn}: stored secret has an unknown format")
        nonce, ciphertext = stored[1 : 1 + _NONCE_BYTES], stored[1 + _NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, ciphertext, sn.encode())
        except InvalidTag as e:
            raise PlatformError(
                f"homebase {sn}: stored secret does not decrypt with the configured key"
            ) from e


def new_homebase_secret() -> bytes:
    return secrets.token_bytes(HOMEBASE_SECRET_BYTES)


def new_cluster_secret() -> str:
    return secrets.token_hex(CLUSTER_SECRET_BYTES)


def cluster_secret_digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def same_digest(a: bytes, b: bytes) -> bool:
    """Constant-time equality of two digests."""
    return hmac.compare_digest(a, b)
