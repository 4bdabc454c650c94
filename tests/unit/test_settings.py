import re
from collections.abc import Callable

import msgspec
import pytest

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import (
    RENAMED,
    Section,
    Settings,
    renamed_variables,
    unknown_variables,
)


def test_defaults_point_at_the_private_stack() -> None:
    settings = Settings.from_env({})
    assert settings.database.url == "postgresql://postgres@127.0.0.1:54329/energy_platform"
    assert settings.mqtt.url == "mqtt://127.0.0.1:1883"
    assert (settings.http.api_port, settings.http.provisioning_port) == (8000, 8001)
    assert settings.http.forwarder_port == 8002
    assert (settings.devices.coap_port, settings.provisioning.tftp_port) == (5683, 6969)


def test_variables_override_their_field_and_are_converted() -> None:
    settings = Settings.from_env(
        {
            "EP_DATABASE_URL": "postgresql://db.example/x",
            "EP_HTTP_API_PORT": "9000",
            "EP_LOG_FORMAT": "json",
            "EP_SHUTDOWN_TIMEOUT": "2.5",
            "EP_UNRELATED_THING": "ignored",
        }
    )
    assert settings.database.url == "postgresql://db.example/x"
    assert settings.http.api_port == 9000
    assert settings.log.format == "json"
    assert settings.shutdown_timeout == 2.5


@pytest.mark.parametrize(
    ("name", "value"),
    [("EP_HTTP_API_PORT", "eighty"), ("EP_LOG_LEVEL", "loud"), ("EP_SHUTDOWN_TIMEOUT", "soon")],
)
def test_an_invalid_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        Settings.from_env({name: value})
    assert error.value.detail.startswith(f"{name}: ")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EP_ENGINE_ROUND_S", "0"),
        ("EP_API_COSTLY_CONNECTIONS_PER_USER", "0"),
        ("EP_API_OVERVIEWS_PER_USER", "0"),
        ("EP_API_COSTLY_SHARE_PER_USER", "0"),
        ("EP_API_COSTLY_SHARE_PER_USER", "3.5"),  # more than the lane's 3 backends
        ("EP_API_COSTLY_BURST_S", "-1"),
    ],
)
def test_a_bound_out_of_range_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        Settings.from_env({name: value})
    assert name in error.value.detail


def test_reuse_port_is_refused_with_granian_and_taken_with_uvicorn() -> None:
    with pytest.raises(ConfigurationError, match="EP_HTTP_REUSE_PORT needs EP_HTTP_SERVER=uvicorn"):
        Settings.from_env({"EP_HTTP_REUSE_PORT": "true", "EP_HTTP_SERVER": "granian"})
    assert Settings.from_env({"EP_HTTP_REUSE_PORT": "true"}).http.reuse_port is True


def test_an_unknown_variable_is_reported_with_the_setting_it_likely_meant() -> None:
    environ = {
        "EP_HTTP_API_PROT": "9000",  # a typo of EP_HTTP_API_PORT
        "EP_UNRELATED_THING": "x",
        "EP_HTTP_API_PORT": "9001",
        "PATH": "/bin",
    }
    assert unknown_variables(environ) == {
        "EP_HTTP_API_PROT": "EP_HTTP_API_PORT",
        "EP_UNRELATED_THING": None,
    }
    # Ignored by the settings themselves: the typo does not set the port.
    assert Settings.from_env(environ).http.api_port == 9001


def test_every_setting_is_known() -> None:
    assert unknown_variables({"EP_SHUTDOWN_TIMEOUT": "1", "EP_COMPACTION_AFTER_DAYS": "3"}) == {}


def test_a_renamed_variable_still_sets_its_setting_and_is_reported() -> None:
    environ = {"EP_DEVICES_TFTP_PORT": "7069"}
    assert Settings.from_env(environ).provisioning.tftp_port == 7069
    assert renamed_variables(environ) == {"EP_DEVICES_TFTP_PORT": "EP_PROVISIONING_TFTP_PORT"}
    assert unknown_variables(environ) == {}
    # The current name wins over the former one.
    environ["EP_PROVISIONING_TFTP_PORT"] = "7070"
    assert Settings.from_env(environ).provisioning.tftp_port == 7070


@pytest.mark.parametrize(
    ("former", "current", "value", "read"),
    [
        ("EP_INGEST_COAP_BURST", "EP_DEVICES_COAP_BURST", "7", lambda s: s.devices.coap_burst),
        (
            "EP_RULES_OFFLINE_AFTER",
            "EP_NOTIFICATIONS_OFFLINE_AFTER",
            "60",
            lambda s: s.notifications.offline_after,
        ),
        (
            "EP_CORRECTIONS_DAYS",
            "EP_HISTORY_CORRECTIONS_DAYS",
            "3",
            lambda s: s.history.corrections_days,
        ),
        # Issue 60: money's currency is billing's, this cluster at provisioning pairing's.
        ("EP_ENGINE_CURRENCY", "EP_BILLING_CURRENCY", "CZK", lambda s: s.billing.currency),
        (
            "EP_CLUSTER_PROVISIONING_URL",
            "EP_PAIRING_PROVISIONING_URL",
            "http://provisioning.example:8001",
            lambda s: s.pairing.provisioning_url,
        ),
        (
            "EP_CLUSTER_SECRET",
            "EP_PAIRING_CLUSTER_SECRET",
            "s3",
            lambda s: s.pairing.cluster_secret,
        ),
        (
            "EP_CLUSTER_ACCOUNTS_SYNC_INTERVAL",
            "EP_PAIRING_ACCOUNTS_SYNC_INTERVAL",
            "60.0",
            lambda s: s.pairing.accounts_sync_interval,
        ),
    ],
)
def test_a_section_named_for_its_domain_still_takes_its_former_variables(
    former: str, current: str, value: str, read: Callable[[Settings], object]
) -> None:
    environ = {former: value}
    assert str(read(Settings.from_env(environ))) == value
    assert renamed_variables(environ) == {former: current}
    assert unknown_variables(environ) == {}


def test_every_renamed_variable_names_a_setting_of_today() -> None:
    unknown = unknown_variables(dict.fromkeys(RENAMED.values(), "1"))
    assert unknown == {}, "RENAMED points at a variable no setting has"


def test_a_bad_value_under_a_former_name_names_the_variable_that_was_set() -> None:
    with pytest.raises(ConfigurationError) as error:
        Settings.from_env({"EP_DEVICES_TFTP_PORT": "sixty-nine"})
    assert error.value.detail.startswith("EP_DEVICES_TFTP_PORT: ")


def sections() -> dict[str, type[msgspec.Struct]]:
    return {
        f.name: f.type
        for f in msgspec.structs.fields(Settings)
        if isinstance(f.type, type) and issubclass(f.type, msgspec.Struct)
    }


# Text settings whose names sound secret but hold no secret: a file's path.
NOT_SECRET = {"tls_key"}


def test_every_section_of_the_settings_hides_its_secrets_in_its_repr() -> None:
    """Settings end up in tracebacks and test reports: no password, key or secret may show.
    Every URL is given a password, every setting named like a secret a secret value."""
    secret = "hunter2-b7c1"
    environ = {}
    for key, section in sections().items():
        assert issubclass(section, Section), f"{section.__name__} must be a Section"
        for field in msgspec.structs.fields(section):
            variable = f"EP_{key}_{field.name}".upper()
            if field.name.endswith("url"):
                environ[variable] = f"postgresql://someone:{secret}@db.example:5432/x"
            elif (
                re.search("secret|password|token|key", field.name) and field.name not in NOT_SECRET
            ):
                assert field.name in section.SECRETS, f"{variable} is not in its SECRETS"
                environ[variable] = secret
    shown = repr(Settings.from_env(environ))
    assert "someone:***@db.example" in shown  # the URLs are there, without their passwords
    assert secret not in shown
    assert "secret_key=<set>" in shown
    assert "secret=<set>" in shown


SECRET = "hunter2-b7c1"


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://someone:{SECRET}@db.example:5432/x",
        f"postgresql://someone@db.example/x?sslmode=require&password={SECRET}",
        f"postgres://db.example/x?Pass%77ord={SECRET}",
        f"postgresql://someone@db.example/x?sslpassword={SECRET}&application_name=ep",
        f"postgresql://[::1]:5432,db.example/x?password={SECRET}",
        f"host=db.example user=someone password={SECRET} dbname=x",
        f"host=db.example password = {SECRET} dbname=x",
        f"host=db.example PASSWORD='{SECRET} with blanks' dbname=x",
        f"host=db.example password='{SECRET}\\' quoted' dbname=x",
        f"host=db.example sslpassword={SECRET}",
        f"password='{SECRET} unterminated",
        f"postgresql://someone:{SECRET}@[::1",  # not a URL Python can split
    ],
)
def test_the_repr_hides_a_password_in_any_dsn_form(dsn: str) -> None:
    settings = Settings.from_env({"EP_DATABASE_URL": dsn, "EP_DATABASE_READ_URL": dsn})
    shown = repr(settings)
    assert SECRET not in shown
    assert "with blanks" not in shown
    assert "quoted" not in shown
    assert "unterminated" not in shown


def test_the_repr_keeps_what_is_not_a_password() -> None:
    shown = repr(
        Settings.from_env(
            {
                "EP_DATABASE_URL": "host=db.example user=someone password=x dbname=energy",
                "EP_DATABASE_READ_URL": "postgresql://someone:x@replica.example/energy?sslmode=require",
            }
        ).database
    )
    assert "url='host=db.example user=someone password=*** dbname=energy'" in shown
    assert "read_url='postgresql://someone:***@replica.example/energy?sslmode=require'" in shown
