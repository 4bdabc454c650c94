from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
import structlog

from energy_platform.settings import DatabaseSettings, HttpSettings, MqttSettings, Settings
from tests.support.databases import (
    create_empty_database,
    create_session_database,
    database_server,
    drop_database,
)
from tests.support.services import free_port


@pytest.fixture(scope="session", autouse=True)
def logs_on_stderr() -> None:
    """Services in the test's loop log to stderr, never into the stdout that ``run_admin``
    reads the admin commands' JSON from (sys.stderr looked up at each line: pytest swaps it)."""
    structlog.configure(logger_factory=lambda *_: structlog.PrintLogger(sys.stderr))


@pytest.fixture(scope="session")
def database_server_url() -> Iterator[str]:
    with database_server() as url:
        yield url


@pytest.fixture(scope="session")
def database_url(database_server_url: str) -> Iterator[str]:
    """This session's own database, migrated to the current sql/."""
    url = create_session_database(database_server_url)
    yield url
    drop_database(url)


@pytest.fixture
def empty_database_url(database_server_url: str) -> Iterator[str]:
    url = create_empty_database(database_server_url)
    yield url
    drop_database(url)


@pytest.fixture(scope="session")
def mqtt_url() -> str:
    return Settings.from_env(os.environ).mqtt.url


@pytest.fixture(scope="session")
def settings(database_url: str, mqtt_url: str) -> Settings:
    """Settings for services started by a test: the session database, free ports."""
    return Settings(
        database=DatabaseSettings(url=database_url, connect_timeout=2.0),
        mqtt=MqttSettings(
            url=mqtt_url, accounts_url=Settings.from_env(os.environ).mqtt.accounts_url
        ),
        http=HttpSettings(
            api_port=free_port(), provisioning_port=free_port(), forwarder_port=free_port()
        ),
    )
