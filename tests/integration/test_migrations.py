from pathlib import Path

import psycopg
import pytest

from energy_platform.db.migrations import MigrationError, applied, migrate
from energy_platform.paths import migrations_dir


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def table_exists(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def test_files_apply_in_order_once_and_are_recorded_with_checksums(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0002_second.sql", "ALTER TABLE first ADD COLUMN b int;")
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);\n-- a comment only\n")

    first_run = migrate(empty_database_url, tmp_path)
    second_run = migrate(empty_database_url, tmp_path)

    assert [m.filename for m in first_run] == ["0001_first.sql", "0002_second.sql"]
    assert second_run == []
    recorded = applied(empty_database_url)
    assert [(r.version, r.name) for r in recorded] == [(1, "first"), (2, "second")]
    assert recorded[0].checksum == first_run[0].checksum
    assert len(recorded[0].checksum) == 64


def test_a_changed_applied_file_is_an_error_naming_it(
    empty_database_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    migrate(empty_database_url, tmp_path)
    path.write_text("CREATE TABLE first (a bigint);")
    write(tmp_path, "0002_second.sql", "CREATE TABLE second (a int);")

    with pytest.raises(MigrationError, match=r"0001_first\.sql changed after it was applied"):
        migrate(empty_database_url, tmp_path)
    assert not table_exists(empty_database_url, "second")


def test_a_failing_file_changes_nothing_and_names_file_and_statement(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    write(
        tmp_path,
        "0002_broken.sql",
        "CREATE TABLE second (a int);\n"
        "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n"
        "INSERT INTO no_such_table VALUES (1);\n",
    )

    with pytest.raises(MigrationError) as error:
        migrate(empty_database_url, tmp_path)

    message = error.value.detail
    assert message.startswith("0002_broken.sql: statement 3 failed")
    assert "no_such_table" in message
    assert "INSERT INTO no_such_table VALUES (1)" in message
    assert table_exists(empty_database_url, "first")
    assert not table_exists(empty_database_url, "second")
    assert [r.version for r in applied(empty_database_url)] == [1]


def test_a_badly_named_file_is_refused_before_anything_runs(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    write(tmp_path, "2_second.sql", "CREATE TABLE second (a int);")
    with pytest.raises(MigrationError, match=r"2_second\.sql: name must look like"):
        migrate(empty_database_url, tmp_path)
    assert not table_exists(empty_database_url, "first")


def test_the_project_migrations_install_timescaledb_and_the_schemas(database_url: str) -> None:
    assert migrate(database_url, migrations_dir()) == []
    with psycopg.connect(database_url) as conn:
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'"
        ).fetchone()
        schemas = {
            row[0]
            for row in conn.execute(
                "SELECT nspname FROM pg_namespace"
                " WHERE nspname IN ('provisioning', 'cluster', 'forwarder')"
            )
        }
        gist = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gist'").fetchone()
    assert version is not None
    assert version[0].split(".")[0] == "2"
    assert schemas == {"provisioning", "cluster", "forwarder"}
    assert gist is not None
