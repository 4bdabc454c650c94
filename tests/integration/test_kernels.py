"""The array kernels (sql/kernels, bound by sql/functions/10_core_kernels.sql) equal their SQL
references to the bit, for any arrays: nulls, any lower bound, subscripts outside them, runs
that are empty or reversed, a missing day. What-if's money is these sums over these slices
(docs/billing.md#what-if)."""

from __future__ import annotations

import math
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from energy_platform.core.db.migrations import migrate
from energy_platform.core.paths import migrations_dir

# Magnitudes whose products and sums stay finite and never underflow to 0: where the reference
# (float8mul, float8pl) raises an error instead, the kernel gives the infinity or the zero.
finite = st.floats(min_value=-1e100, max_value=1e100).filter(lambda v: v == 0 or abs(v) >= 1e-100)
element = st.one_of(st.none(), finite, st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]))
arrays = st.tuples(st.integers(min_value=-3, max_value=3), st.lists(element, max_size=12))
subscripts = st.integers(min_value=-5, max_value=16)

BOUND = """
SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.oid = %s::regprocedure"""
SUMS = """
SELECT cluster.slice_sum(a, %(lo)s, %(hi)s), cluster.slice_sum_reference(a, %(lo)s, %(hi)s),
       cluster.slice_dot(a, b, %(lo)s, %(hi)s), cluster.slice_dot_reference(a, b, %(lo)s, %(hi)s)
  FROM (SELECT %(a)s::text::float8[] AS a, %(b)s::text::float8[] AS b) x"""
# Compared as text: every element to the bit (shortest exact digits), the bounds with them.
DAY_QUARTERS = """
SELECT cluster.day_quarters(a, b, %(first)s, %(count)s)::text,
       cluster.day_quarters_reference(a, b, %(first)s, %(count)s)::text
  FROM (SELECT %(a)s::text::float8[] AS a, %(b)s::text::float8[] AS b) x"""


def literal(array: tuple[int, list[float | None]]) -> str:
    """The array's text form with its lower bound: ``[0:2]={1,NULL,3}``."""
    lower, values = array
    if not values:
        return "{}"
    items = ",".join("NULL" if v is None else repr(v) for v in values)
    return f"[{lower}:{lower + len(values) - 1}]={{{items}}}"


def same(kernel: float | None, reference: float | None) -> bool:
    """Equal to the bit, NaN equal to NaN."""
    if kernel is None or reference is None:
        return kernel is reference
    if math.isnan(reference):
        return math.isnan(kernel)
    return math.copysign(1, kernel) == math.copysign(1, reference) and kernel == reference


KERNELS = (
    "cluster.slice_sum(float8[], integer, integer)",
    "cluster.slice_dot(float8[], float8[], integer, integer)",
    "cluster.day_quarters(float8[], float8[], integer, integer)",
)


def bound(conn: psycopg.Connection) -> list[str]:
    """The language each kernel's function is bound to: c, or sql (its reference)."""
    languages = []
    for function in KERNELS:
        row = conn.execute(BOUND, (function,)).fetchone()
        assert row is not None
        languages.append(row[0])
    return languages


def test_the_test_stack_runs_the_kernels(sync_db: psycopg.Connection) -> None:
    """`make test` builds and installs the library, and `migrate` binds the functions to it:
    the comparison below is of the kernels, not of the references with themselves."""
    assert bound(sync_db) == ["c", "c", "c"]


def test_a_server_without_the_library_keeps_the_references_and_migrate_says_so(
    database_url: str, sync_db: psycopg.Connection, tmp_path: Path
) -> None:
    """The kernels' definitions as they are, on a server where the library they name is
    missing: the functions stay bound to their SQL references, answer as they do, and
    `migrate` logs a warning (not only a notice nobody reads)."""
    project = migrations_dir()
    for path in project.glob("*.sql"):
        (tmp_path / path.name).symlink_to(path)
    (tmp_path / "functions").mkdir()
    text = (project / "functions" / "10_core_kernels.sql").read_text()
    missing = text.replace("'energy_platform_kernels'", "'energy_platform_kernels_missing'")
    assert missing != text
    (tmp_path / "functions" / "10_core_kernels.sql").write_text(missing)
    try:
        with capture_logs() as logs:
            migrate(database_url, tmp_path)
        fallback = bound(sync_db)
        dot = sync_db.execute("SELECT cluster.slice_dot('{1,2,3}', '{4,NULL,6}', 1, 3)").fetchone()
    finally:
        migrate(database_url, project)

    assert fallback == ["sql", "sql", "sql"]
    assert dot == (22.0,)
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert "the array kernels are not installed on this server" in warning["message"]
    assert bound(sync_db) == ["c", "c", "c"]  # and bound again where the library is


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=arrays, b=arrays, lo=subscripts, hi=subscripts)
def test_a_kernel_equals_its_reference_to_the_bit(
    sync_db: psycopg.Connection,
    a: tuple[int, list[float | None]],
    b: tuple[int, list[float | None]],
    lo: int,
    hi: int,
) -> None:
    row = sync_db.execute(SUMS, {"a": literal(a), "b": literal(b), "lo": lo, "hi": hi}).fetchone()
    assert row is not None
    kernel_sum, reference_sum, kernel_dot, reference_dot = row
    assert same(kernel_sum, reference_sum), (kernel_sum, reference_sum)
    assert same(kernel_dot, reference_dot), (kernel_dot, reference_dot)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    day=st.none() | arrays,
    following=st.none() | arrays,
    first=st.integers(min_value=-5, max_value=30),
    count=st.integers(min_value=-2, max_value=30),
)
def test_a_local_day_is_sliced_as_the_reference_slices_it(
    sync_db: psycopg.Connection,
    day: tuple[int, list[float | None]] | None,
    following: tuple[int, list[float | None]] | None,
    first: int,
    count: int,
) -> None:
    """Either day missing (96 nulls), any lengths and lower bounds, any run."""
    args = {
        "a": None if day is None else literal(day),
        "b": None if following is None else literal(following),
        "first": first,
        "count": count,
    }
    row = sync_db.execute(DAY_QUARTERS, args).fetchone()
    assert row is not None
    assert row[0] == row[1]


def test_a_local_day_across_two_utc_days(sync_db: psycopg.Connection) -> None:
    """Prague's winter day: the last 4 quarters of one UTC day, the first 92 of the next; the
    next missing gives nulls, not a shorter day."""
    day = "{" + ",".join(str(n) for n in range(1, 97)) + "}"
    following = "{" + ",".join(str(100 + n) for n in range(1, 97)) + "}"
    row = sync_db.execute(
        "SELECT cluster.day_quarters(%s::float8[], %s::float8[], 93, 96),"
        " cluster.day_quarters(%s::float8[], NULL, 93, 96)",
        (day, following, day),
    ).fetchone()
    assert row is not None
    assert row[0] == [93.0, 94.0, 95.0, 96.0] + [100.0 + n for n in range(1, 93)]
    assert row[1] == [93.0, 94.0, 95.0, 96.0] + [None] * 92


def test_a_run_with_nothing_in_it_sums_to_null(sync_db: psycopg.Connection) -> None:
    """As sum() of no rows: a run outside the array, a reversed run, only nulls."""
    cases = [
        ("{1,2,3}", "{1,2,3}", 4, 9),
        ("{1,2,3}", "{1,2,3}", 3, 2),
        ("{1,NULL,3}", "{NULL,2,NULL}", 1, 3),
        ("{}", "{}", 1, 1),
    ]
    for a, b, lo, hi in cases:
        row = sync_db.execute(SUMS, {"a": a, "b": b, "lo": lo, "hi": hi}).fetchone()
        assert row is not None
        assert row[2:] == (None, None), (a, b, lo, hi, row)
    row = sync_db.execute(SUMS, {"a": "{1,2,3}", "b": "{}", "lo": 4, "hi": 9}).fetchone()
    assert row == (None, None, None, None)


def test_subscripts_at_the_ends_of_the_integers_answer_as_the_references(
    sync_db: psycopg.Connection,
) -> None:
    """An array ending at the largest subscript PostgreSQL allows is summed to its end by a run
    to the largest integer; a run whose last subscript lies past the integers is the
    reference's error, not a wrapped count."""
    top = "[2147483645:2147483646]={1,2}"
    row = sync_db.execute(SUMS, {"a": top, "b": top, "lo": 2147483640, "hi": 2147483647})
    assert row.fetchone() == (3.0, 3.0, 5.0, 5.0)
    for statement in (
        "SELECT cluster.day_quarters('{1,2}', NULL, 2147483647, 2)",
        "SELECT cluster.day_quarters_reference('{1,2}', NULL, 2147483647, 2)",
    ):
        with pytest.raises(psycopg.errors.NumericValueOutOfRange):
            sync_db.execute(statement)
