"""The provisioning key: read from the environment, never shown, and required to be 256 bits."""

from __future__ import annotations

import secrets

import pytest

from energy_platform.core.errors import ConfigurationError, PlatformError
from energy_platform.core.settings import Settings
from energy_platform.provisioning.crypto import SecretKey, new_homebase_secret


def test_the_key_comes_from_its_variable_and_stays_out_of_reprs() -> None:
    key = secrets.token_hex(32)
    settings = Settings.from_env(
        {"EP_PROVISIONING_SECRET_KEY": key, "EP_PROVISIONING_SN_BURST": "4"}
    )
    assert settings.provisioning.secret_key == key
    assert settings.provisioning.sn_burst == 4
    assert key not in repr(settings)
    assert key not in repr(SecretKey(key))


@pytest.mark.parametrize("value", ["", "00" * 31, "zz" * 32, "00" * 33])
def test_a_key_that_is_not_64_hex_characters_is_refused_by_name(value: str) -> None:
    with pytest.raises(ConfigurationError, match="EP_PROVISIONING_SECRET_KEY"):
        SecretKey(value)


def test_a_stored_secret_opens_only_with_its_key_and_its_serial_number() -> None:
    key, other_key = SecretKey(secrets.token_hex(32)), SecretKey(secrets.token_hex(32))
    secret = new_homebase_secret()
    stored = key.encrypt("0123456789ABCDEF", secret)

    assert key.decrypt("0123456789ABCDEF", stored) == secret
    with pytest.raises(PlatformError):
        other_key.decrypt("0123456789ABCDEF", stored)
    with pytest.raises(PlatformError):
        key.decrypt("FEDCBA9876543210", stored)  # a row's ciphertext copied to another homebase
