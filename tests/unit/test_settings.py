import pytest

from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import Settings, unknown_variables


def test_defaults_point_at_the_private_stack() -> None:
    settings = Settings.from_env({})
    assert settings.database.url == "postgresql://postgres@127.0.0.1:54329/energy_platform"
    assert settings.mqtt.url == "mqtt://127.0.0.1:1883"
    assert (settings.http.api_port, settings.http.provisioning_port) == (8000, 8001)
    assert settings.http.forwarder_port == 8002
    assert (settings.devices.coap_port, settings.devices.tftp_port) == (5683, 6969)


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
