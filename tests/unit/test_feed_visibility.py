"""Which feeds a user sees is written once: ``cluster.visible_feeds`` and ``cluster.user_feeds``
(sql/functions/14_core_feeds.sql). A query that reads ``cluster.feeds`` itself on a user's behalf is
a second copy of that tenant wall, free to drift from the first (nine copies once held the
forwarder's part of it). So every SQL string of the package, and every view and function of
sql/functions/, that reads ``cluster.feeds`` is either the definition or named below with the
reason it may see every feed."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlparse

import energy_platform
from energy_platform.core.paths import migrations_dir

ROOT = Path(energy_platform.__file__).parent
FUNCTIONS = migrations_dir() / "functions"
FEEDS = re.compile(r'\bcluster\s*\.\s*(?:feeds\b|"feeds")', re.IGNORECASE)

# SQL strings of the package that read every feed, by the name they are assigned to. Names, not
# paths, so that an entry survives its module's move; each must name exactly one query. None of
# them answers a user or tells one anything.
ALL_FEEDS_QUERIES = {
    # Admin commands: the operator sees the whole cluster, and a forwarded homebase's feed is
    # still theirs to configure, extend or delete.
    "FEEDS_OWNED": "admin users delete refuses while the user owns any feed",
    "INSERT_FEED": "admin feeds add",
    "LIST_FEEDS": "admin feeds list",
    "FEED_BY_ID": "admin feeds configure, admin streams list",
    "SET_SUBSCRIPTION": "admin feeds subscription",
    "DELETE_FEED": "admin feeds delete",
    "FEED_EXISTS": "admin reprocess names a feed",
    "TARIFF_FEED": "admin tariffs names a feed",
    "CORRECTED_FEED": "admin corrections list names a feed",
    "IMPORT_TARGET": "admin import names a feed; a forwarded homebase's history goes on",
    # Ingest: this very lookup is what sends a registered homebase's data to the forwarder.
    "ROUTE": "where a homebase's data goes: its feed or the forwarder",
    # Pairing: a homebase stays paired while a feed or a registration holds it.
    "HOLDERS": "what holds a homebase in this cluster",
    # The operator's gauge of the homebases paired with this cluster.
    "INGEST": "the ep_homebases_paired gauge",
    # A rule that only closes: `open` is not shown to users, so closing a hidden feed's notice
    # tells no one anything.
    "SUBSCRIPTION_CLOSE": "closes subscription-ending notices",
    # What a rule that failed on data is narrowed down among, read only then: the rules' own
    # statements still read feeds through the tenant wall.
    "NARROWED_FEEDS": "the feeds a rule that failed on data is narrowed down among",
    # Seeding (tests, benchmarks, scripts): points are sent as their feed's homebase sends them.
    "STREAM_SENDER": "seeding.write_points: the homebase a stream's points come from",
}

# Views and functions of sql/functions/ that read every feed.
ALL_FEEDS_DEFINITIONS = {
    "cluster.visible_feeds": "the definition itself",
    # Analysts see the whole cluster; cluster.visible_feeds is theirs to join for what users see.
    "cluster.raw_readings": "analysts' points",
    "cluster.processed_readings": "analysts' points",
    "cluster.system_readings": "analysts' points",
    "cluster.readings": "analysts' points",
    "cluster.hourly_readings": "analysts' rollups",
    "cluster.daily_readings": "analysts' rollups",
    # The configuration and tariff setters behind admin commands: they lock the feed's row.
    "cluster.set_feed_config": "admin feeds configure",
    "cluster.set_tariff": "admin tariffs set",
    # A trigger on the table, not a read of it: a feed's change wakes the live streams' check
    # of who may follow what (which reads cluster.user_feeds).
    "feeds_live_access": "the trigger that notifies ep_live_access",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def package_strings(root: Path) -> Iterator[tuple[str, str]]:
    """(name, text) of every string of the package's code but docstrings: the name it is assigned
    to, else its file and line (an inline query has no name an entry could give)."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = {
            id(node.value): target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                where = f"{path.relative_to(root)}:{node.lineno}"
                if id(node) not in docstrings:
                    yield names.get(id(node), where), node.value


def reads_feeds(sql: str) -> bool:
    """Whether SQL names the table cluster.feeds outside its comments."""
    return bool(FEEDS.search(sql)) and bool(FEEDS.search(sqlparse.format(sql, strip_comments=True)))


def unexplained(found: list[str], allowed: dict[str, str]) -> list[str]:
    counts = Counter(found)
    return sorted(
        f"{name} reads cluster.feeds"
        if name not in allowed
        else f"{name}: {counts[name]} queries of this name read cluster.feeds"
        for name in counts
        if name not in allowed or counts[name] > 1
    )


def queries_reading_feeds(root: Path = ROOT) -> list[str]:
    return [name for name, text in package_strings(root) if reads_feeds(text)]


CREATES = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?(?:VIEW|FUNCTION|PROCEDURE|TRIGGER)\s+"
    r"([\w.]+)",
    re.IGNORECASE,
)
# A COMMENT's text only talks about tables, and a DROP reads none.
READS_NOTHING = re.compile(r"^\s*(COMMENT|DROP)\b", re.IGNORECASE)


def definitions_reading_feeds(directory: Path = FUNCTIONS) -> list[str]:
    """Views and functions of ``directory`` that read cluster.feeds, by name; any other
    statement that does (a DO block, a trigger), by its file and number."""
    found = []
    for path in sorted(directory.glob("*.sql")):
        # Numbered as `migrate` numbers them in its errors: statements with code only.
        codes = [sqlparse.format(s, strip_comments=True) for s in sqlparse.split(path.read_text())]
        for number, code in enumerate((c for c in codes if c.strip()), start=1):
            if READS_NOTHING.match(code) or not reads_feeds(code):
                continue
            created = CREATES.match(code)
            found.append(created[1].lower() if created else f"{path.name}: statement {number}")
    return found


def test_no_query_of_the_package_reads_cluster_feeds_for_a_user() -> None:
    assert unexplained(queries_reading_feeds(), ALL_FEEDS_QUERIES) == []


def test_no_view_or_function_reads_cluster_feeds_for_a_user() -> None:
    assert unexplained(definitions_reading_feeds(), ALL_FEEDS_DEFINITIONS) == []


def test_every_exception_still_reads_cluster_feeds() -> None:
    # A stale entry would let a new query of its name through unseen.
    assert set(ALL_FEEDS_QUERIES) == set(queries_reading_feeds())
    assert set(ALL_FEEDS_DEFINITIONS) == set(definitions_reading_feeds())


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        # The data API's copy as it was: the forwarder's rule written into the query.
        (
            'VISIBLE_FEED = """\nSELECT f.id FROM cluster.feeds f\n WHERE f.id = $1'
            " AND (f.owner_id = $2 OR $3)\n   AND NOT EXISTS (SELECT 1 FROM"
            ' forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn)"""\n',
            ["VISIBLE_FEED reads cluster.feeds"],
        ),
        # The same without it: the leak the test is for.
        (
            'FEEDS_OF_OWNER = "SELECT id FROM cluster.feeds WHERE owner_id = $1"\n',
            ["FEEDS_OF_OWNER reads cluster.feeds"],
        ),
        (
            "async def feeds(conn, user):\n"
            '    return await conn.fetch("select id from CLUSTER . feeds where owner_id = $1")\n',
            ["api/leak.py:2 reads cluster.feeds"],
        ),
        # An exception's name reused for a second query is no exception.
        (
            'ROUTE = "SELECT id FROM cluster.feeds WHERE homebase_sn = $1"\n'
            'def other():\n    ROUTE = "SELECT owner_id FROM cluster.feeds"\n',
            ["ROUTE: 2 queries of this name read cluster.feeds"],
        ),
        # Through the definition, or only in words: nothing to say.
        (
            '"""Reads cluster.feeds through cluster.user_feeds."""\n'
            'OWN = """\n-- never cluster.feeds itself\nSELECT id FROM cluster.user_feeds($1, false)'
            '"""\n'
            'RULE = "SELECT f.id FROM cluster.visible_feeds f JOIN cluster.feeds_x x ON true"\n',
            [],
        ),
    ],
)
def test_a_query_that_reads_cluster_feeds_is_caught(
    tmp_path: Path, source: str, caught: list[str]
) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api/leak.py").write_text(source)
    assert unexplained(queries_reading_feeds(tmp_path), ALL_FEEDS_QUERIES) == caught


def test_a_view_or_function_that_reads_cluster_feeds_is_caught(tmp_path: Path) -> None:
    (tmp_path / "90_core_views.sql").write_text(
        "-- cluster.feeds is read through cluster.visible_feeds only.\n"
        "DROP VIEW IF EXISTS cluster.owned, cluster.activity;\n"
        "CREATE VIEW cluster.activity AS\n"
        "SELECT f.id, p.last_data_at\n"
        "  FROM cluster.feeds f\n"
        "  LEFT JOIN cluster.homebase_presence p ON p.homebase_sn = f.homebase_sn;\n"
        "COMMENT ON VIEW cluster.activity IS 'Per feed of cluster.feeds.';\n"
        "CREATE VIEW cluster.shown AS SELECT id FROM cluster.visible_feeds;\n"
        "CREATE OR REPLACE FUNCTION cluster.owned(user_id bigint) RETURNS SETOF bigint\n"
        "LANGUAGE sql STABLE AS $$\n"
        "    SELECT f.id FROM cluster.feeds f WHERE f.owner_id = owned.user_id\n"
        "$$;\n"
        "DO $$ BEGIN PERFORM 1 FROM cluster.feeds; END $$;\n"
    )
    assert unexplained(definitions_reading_feeds(tmp_path), ALL_FEEDS_DEFINITIONS) == [
        "90_core_views.sql: statement 6 reads cluster.feeds",
        "cluster.activity reads cluster.feeds",
        "cluster.owned reads cluster.feeds",
    ]
