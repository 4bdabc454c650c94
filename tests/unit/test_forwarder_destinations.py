"""Which delivery addresses are public, and EP_FORWARDER_ALLOWED_NETWORKS (no network used)."""

from ipaddress import ip_address, ip_network

import pytest

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import Settings
from energy_platform.forwarder.destinations import is_allowed

NOT_PUBLIC = [
    "127.0.0.1", "10.1.2.3", "172.31.255.1", "192.168.0.1", "169.254.169.254", "100.64.0.1",
    "224.0.0.251", "240.0.0.1", "255.255.255.255", "192.0.2.1", "::1", "::",
    "0.0.0.0",  # noqa: S104 - refused here, never bound
    "fe80::1", "fc00::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
    "2002:c0a8:101::", "2001:db8::1",
]  # fmt: skip
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_not_public_addresses_are_refused_unless_allowed(address: str) -> None:
    assert not is_allowed(ip_address(address), [])
    everything = [ip_network("0.0.0.0/0"), ip_network("::/0")]
    assert is_allowed(ip_address(address), everything)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_allowed(ip_address(address), [])


def test_allowed_networks_are_read_once_with_the_settings() -> None:
    settings = Settings.from_env({"EP_FORWARDER_ALLOWED_NETWORKS": "127.0.0.0/8, ::1/128"})
    assert settings.forwarder.networks() == (ip_network("127.0.0.0/8"), ip_network("::1/128"))
    assert Settings.from_env({}).forwarder.networks() == ()
    with pytest.raises(ConfigurationError, match="allowed_networks"):
        Settings.from_env({"EP_FORWARDER_ALLOWED_NETWORKS": "127.0.0.1/8"})
