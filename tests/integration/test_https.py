"""EP_HTTP_TLS_CERT / EP_HTTP_TLS_KEY: every HTTP service serves HTTPS with that certificate,
on either HTTP server (EP_HTTP_SERVER)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
from pathlib import Path
from typing import Literal

import httpx
import msgspec
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import DeviceSettings, HttpSettings, Settings
from energy_platform.services import build_services
from tests.support.http import http_client
from tests.support.services import free_port, running


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (IP SAN), valid for a day, and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "energy-platform test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


async def get_when_listening(client: httpx.AsyncClient, url: str) -> httpx.Response:
    async with asyncio.timeout(60):
        while True:
            try:
                return await client.get(url)
            except httpx.ConnectError:
                await asyncio.sleep(0.05)


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
async def test_every_http_service_serves_https_with_the_configured_certificate(
    settings: Settings, tmp_path: Path, server: Literal["granian", "uvicorn"]
) -> None:
    cert, key = self_signed(tmp_path)
    tls = msgspec.structs.replace(
        settings,
        http=HttpSettings(
            server=server,
            api_port=free_port(),
            provisioning_port=free_port(),
            forwarder_port=free_port(),
            provisioning_plain_port=free_port(),
            tls_cert=str(cert),
            tls_key=str(key),
        ),
        devices=DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM)),
    )
    services = [
        s
        for s in build_services(["api", "provisioning"], tls)
        if s.name in {"api", "provisioning", "provisioning-http"}
    ]
    bases = [f"https://127.0.0.1:{tls.http.api_port}"]
    bases.append(f"https://127.0.0.1:{tls.http.provisioning_port}")
    trusted = ssl.create_default_context(cafile=str(cert))  # verifies chain and 127.0.0.1
    async with running(*services):
        async with httpx.AsyncClient(verify=trusted, timeout=5) as https:
            for base in bases:
                answer = await get_when_listening(https, base + "/healthz")
                assert answer.status_code == 200
                assert answer.json() == {"status": "ok"}
            unknown = await https.get(bases[1] + "/api/device/0123456789ABCDEF/boot/")
            assert unknown.status_code == 404
            assert unknown.headers["content-type"] == "application/problem+json"
        async with http_client(timeout=5) as untrusting:
            with pytest.raises(httpx.ConnectError):  # default trust store: not this certificate
                await untrusting.get(bases[0] + "/healthz")
        async with http_client(timeout=5) as plain:
            with pytest.raises(httpx.TransportError):  # no plain HTTP on the same port
                await plain.get(f"http://127.0.0.1:{tls.http.api_port}/healthz")
            # Homebases may speak either (the spec): provisioning answers plain HTTP as well,
            # on its own port, the same API.
            http_base = f"http://127.0.0.1:{tls.http.provisioning_plain_port}"
            assert (await get_when_listening(plain, http_base + "/healthz")).status_code == 200
            unknown = await plain.get(http_base + "/api/device/0123456789ABCDEF/boot/")
            assert unknown.status_code == 404
            assert unknown.headers["content-type"] == "application/problem+json"


def test_a_certificate_without_its_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="EP_HTTP_TLS_CERT and EP_HTTP_TLS_KEY"):
        Settings.from_env({"EP_HTTP_TLS_CERT": "/etc/cert.pem"})
