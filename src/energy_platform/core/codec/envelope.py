"""The homebase encryption envelope: ``0x01 | nonce (12 bytes) | AES-256-GCM ciphertext+tag``.

The key is HKDF-SHA256 of the homebase's 256-byte secret (info ``energy-platform v4``); the
serial number is the associated data, so a payload cannot be replayed under another homebase.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = 0x01
NONCE_BYTES = 12
INFO = b"energy-platform v4"
MQTT_INFO = b"energy-platform mqtt"


class EnvelopeError(ValueError):
    """The payload is not an envelope, or does not decrypt under this key."""


def derive_key(secret: bytes) -> AESGCM:
    """The AEAD for a homebase secret (256 bytes, as provisioning hands it out)."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(secret)
    return AESGCM(key)


def mqtt_password(secret: bytes) -> str:
    """The homebase's broker password: hex of HKDF-SHA256(secret, info ``energy-platform mqtt``).

    Derived, never stored: the cluster makes it when it pairs the homebase, the homebase
    computes it from the secret it already holds."""
    return (
        HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=MQTT_INFO).derive(secret).hex()
    )


def seal(aead: AESGCM, sn: str, plaintext: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return bytes([VERSION]) + nonce + aead.encrypt(nonce, plaintext, sn.encode())


def unseal(aead: AESGCM, sn: str, payload: bytes) -> bytes:
    if len(payload) < 1 + NONCE_BYTES + 16 or payload[0] != VERSION:
        raise EnvelopeError("not a version 1 envelope")
    nonce, ciphertext = payload[1 : 1 + NONCE_BYTES], payload[1 + NONCE_BYTES :]
    try:
        return aead.decrypt(nonce, ciphertext, sn.encode())
    except InvalidTag:
        raise EnvelopeError("does not decrypt with this homebase's key") from None
