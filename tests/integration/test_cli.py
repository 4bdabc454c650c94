import json
import os
import subprocess

from energy_platform.core.settings import unknown_variables
from tests.support.admin import CLI


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with this environment's settings (none unknown: those are warned of) and
    ``env``."""
    known = {k: v for k, v in os.environ.items() if k not in unknown_variables(os.environ)}
    return subprocess.run(
        [CLI, *args], env={**known, **env}, capture_output=True, text=True, check=False
    )


def test_migrate_on_a_migrated_database_applies_nothing(database_url: str) -> None:
    result = run("migrate", EP_DATABASE_URL=database_url)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"applied": []}


def test_admin_migrations_lists_what_is_applied_as_json(database_url: str) -> None:
    result = run("admin", "migrations", EP_DATABASE_URL=database_url)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert rows[0]["version"] == 1
    assert rows[0]["name"] == "foundation"
    assert len(rows[0]["checksum"]) == 64


def test_admin_errors_are_one_line_and_a_non_zero_exit() -> None:
    result = run("admin", "migrations", EP_DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("energy-platform: ")


def test_invalid_settings_are_reported_by_variable_name() -> None:
    result = run("admin", "migrations", EP_HTTP_API_PORT="eighty")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("energy-platform: EP_HTTP_API_PORT:")


def test_a_mistyped_variable_is_warned_of_at_start_and_changes_nothing(database_url: str) -> None:
    result = run("admin", "migrations", EP_DATABASE_URL=database_url, EP_DATABSE_POOL_MAX="1")
    assert result.returncode == 0, result.stderr
    warning = json.loads(result.stderr.strip().splitlines()[0])
    assert warning["event"] == "unknown setting ignored"
    assert (warning["variable"], warning["did_you_mean"]) == (
        "EP_DATABSE_POOL_MAX",
        "EP_DATABASE_POOL_MAX",
    )
