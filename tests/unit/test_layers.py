"""The layers of the package hold: every import runs down (or stays inside its package), no
two top-level packages import each other, and no modules import each other in a cycle, inside a
package or across. docs/architecture.md describes the same order (its layer table is read here),
names every package and module, and each domain package has its test folder and docs page.

The SQL of sql/functions/ is held to the same table: each file belongs to the domain its name
starts with (``NN_<domain>_topic.sql``), a function or view of one domain calls another domain's
only where the table lets the first import the second, no domains call each other around a
circle, and no definition calls one that a later file makes (the files are applied in name
order)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import energy_platform

ROOT = Path(energy_platform.__file__).parent
REPOSITORY = ROOT.parents[1]
ARCHITECTURE = REPOSITORY / "docs" / "architecture.md"

# Each top-level part of the package and the parts it may import. `core` is the floor; the
# domains stand on it (devices, api and forwarder on the cluster's pairing too; notifications,
# history, billing and api on the users who call them); the process entry points (services, cli)
# assemble everything. The engine prices buckets by calling billing's SQL, never its Python
# (SQL_ONLY), and billing's setters record what they changed in a table the engine reads.
DOMAINS = {
    "engine",
    "billing",
    "pairing",
    "provisioning",
    "users",
    "notifications",
    "live",
    "devices",
    "api",
    "history",
    "forwarder",
}
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "engine": {"core", "billing"},
    "pairing": {"core"},
    "provisioning": {"core"},
    "users": {"core"},
    "notifications": {"core", "users"},
    "devices": {"core", "pairing"},
    "live": {"core", "users"},
    "billing": {"core", "users"},
    "api": {"core", "pairing", "users", "notifications", "history", "live", "billing"},
    # A stream made by an import is the row a device's first batch makes (ingest's statement).
    "history": {"core", "users", "devices"},
    "forwarder": {"core", "pairing"},
    "services": {"core", *DOMAINS},
    "cli": {"core", "services", *DOMAINS},
    # Test, benchmark and script fixtures, made with the domains' own statements; imported by
    # nothing in the package.
    "seeding": {"core", "users", "api", "devices", "billing", "engine"},
    "__main__": {"cli"},
}

# Rows of ALLOWED that hold for SQL only: the engine's statements price buckets with billing's
# SQL functions, but no module of the engine imports billing's Python.
SQL_ONLY = {("engine", "billing")}


def part_of(module: str) -> str:
    """The top-level part of ``energy_platform.x.y`` (``x``)."""
    return module.split(".")[1]


def imported_modules(path: Path, module: str) -> Iterator[str]:
    """Every energy_platform module ``path`` imports, lazily imported ones included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("energy_platform."))
        elif isinstance(node, ast.ImportFrom):
            yield from imported_modules_of(node, path, module)


def imported_modules_of(node: ast.ImportFrom, path: Path, module: str) -> Iterator[str]:
    """The energy_platform module a ``from ... import`` names (relative ones resolved)."""
    if node.level:
        base = module.split(".")[: -node.level + (path.name == "__init__.py") or None]
        name = ".".join([*base, node.module] if node.module else base)
    else:
        name = node.module or ""
    if name == "energy_platform":
        yield from (f"energy_platform.{a.name}" for a in node.names)
    elif name.startswith("energy_platform."):
        yield name


def edges(root: Path = ROOT) -> set[tuple[str, str, str]]:
    """(importing module, imported module's part, importing module's part) of the package."""
    found = set()
    for path in root.rglob("*.py"):
        module = ".".join(["energy_platform", *path.relative_to(root).with_suffix("").parts])
        if module.endswith(".__init__"):
            module = module.removesuffix(".__init__")
        if module == "energy_platform":
            continue
        for target in imported_modules(path, module):
            found.add((module, part_of(target), part_of(module)))
    return found


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports (a name imported
    from a package is its submodule when one has that name, else the package itself)."""
    modules = {}
    for path in root.rglob("*.py"):
        name = ".".join(["energy_platform", *path.relative_to(root).with_suffix("").parts])
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        if module == "energy_platform":
            continue
        targets = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = next(iter(imported_modules_of(node, path, module)), "")
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            targets.update(n for n in names if n in modules and n != module)
    return graph


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a loop (Tarjan's
    strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while (member := stack.pop()) != module:
                component.append(member)
            if component:
                found.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def upward(found: set[tuple[str, str, str]]) -> list[str]:
    """Imports that leave their part for one the layers do not allow it."""
    return sorted(
        f"{module} imports {target}"
        for module, target, part in found
        if target != part and (target not in ALLOWED.get(part, set()) or (part, target) in SQL_ONLY)
    )


def cycles(found: set[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """Pairs of parts that import each other."""
    pairs = {(part, target) for _, target, part in found if target != part}
    return sorted((a, b) for a, b in pairs if (b, a) in pairs and a < b)


def test_every_part_of_the_package_has_a_place_in_the_layers() -> None:
    parts = {p.stem for p in ROOT.glob("*.py")} | {p.name for p in ROOT.iterdir() if p.is_dir()}
    parts -= {"__init__", "__pycache__"}
    assert parts == set(ALLOWED), "a new top-level part needs its row in ALLOWED"


def test_no_import_runs_back_up_the_layers() -> None:
    assert upward(edges()) == []


def test_no_two_top_level_packages_import_each_other() -> None:
    assert cycles(edges()) == []


@pytest.mark.parametrize(
    ("module", "source", "offending"),
    [
        # The three upward edges of fd798d8, written as they were.
        (
            "engine/housekeeping.py",
            "from energy_platform.devices.ingest.faults import is_outside_fault\n",
            "energy_platform.engine.housekeeping imports devices",
        ),
        (
            "provisioning/services.py",
            "from energy_platform.api.provisioning.app import create_app\n",
            "energy_platform.provisioning.services imports api",
        ),
        (
            "provisioning/coap.py",
            "from energy_platform.devices.coap import CoapSite\n",
            "energy_platform.provisioning.coap imports devices",
        ),
        ("core/errors.py", "from energy_platform import engine\n", "core.errors imports engine"),
        # Allowed to the engine's SQL, never to its Python.
        (
            "engine/processing.py",
            "from energy_platform.billing import bills\n",
            "energy_platform.engine.processing imports billing",
        ),
        ("core/http/app.py", "from ...api import views\n", "core.http.app imports api"),
    ],
)
def test_an_upward_import_is_caught(
    tmp_path: Path, module: str, source: str, offending: str
) -> None:
    path = tmp_path / module
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert upward(edges(tmp_path)) == [offending.replace("core.", "energy_platform.core.")]


def test_a_cycle_between_packages_is_caught(tmp_path: Path) -> None:
    (tmp_path / "devices").mkdir()
    (tmp_path / "pairing").mkdir()
    (tmp_path / "devices/ingest.py").write_text("from energy_platform.pairing import pairings\n")
    (tmp_path / "pairing/pairings.py").write_text("import energy_platform.devices.ingest\n")
    assert cycles(edges(tmp_path)) == [("devices", "pairing")]


def test_no_modules_import_each_other() -> None:
    assert module_cycles(module_graph()) == []


def test_a_cycle_between_two_modules_of_one_package_is_caught(tmp_path: Path) -> None:
    # devices/ingest's amqp.py and service.py before the pipeline became a module of its own:
    # service imported amqp lazily, inside a function.
    (tmp_path / "devices/ingest").mkdir(parents=True)
    (tmp_path / "devices/ingest/__init__.py").write_text("")
    (tmp_path / "devices/ingest/amqp.py").write_text(
        "from energy_platform.devices.ingest.service import Pipeline\n"
    )
    (tmp_path / "devices/ingest/service.py").write_text(
        "def run():\n    from energy_platform.devices.ingest.amqp import consume_queue\n"
    )
    (tmp_path / "devices/ingest/drops.py").write_text("from . import service\n")
    assert module_cycles(module_graph(tmp_path)) == [
        ["energy_platform.devices.ingest.amqp", "energy_platform.devices.ingest.service"]
    ]


def test_a_cycle_around_three_modules_is_caught(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine/a.py").write_text("from energy_platform.engine import b\n")
    (tmp_path / "engine/b.py").write_text("from .c import thing\n")
    (tmp_path / "engine/c.py").write_text("import energy_platform.engine.a\n")
    assert module_cycles(module_graph(tmp_path)) == [
        ["energy_platform.engine.a", "energy_platform.engine.b", "energy_platform.engine.c"]
    ]


def documented_layers(text: str) -> dict[str, set[str]]:
    """The table "package | may import" of architecture.md's Layers section, as ``ALLOWED``
    holds it ("every domain": every package in ``DOMAINS``)."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 2:
            continue
        imports = set(re.findall(r"`(\w+)`", cells[1]))
        layers[cells[0].strip("`")] = imports | (DOMAINS if "every domain" in cells[1] else set())
    return layers


def layout_entries(text: str) -> dict[str, str]:
    """Each top-level part's entry under ``src/energy_platform/`` in architecture.md's layout
    (``name/`` or ``name.py``, then its text), by the part's name."""
    block = text.split("\n## Layout\n", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    current = None
    inside = False
    for line in block.splitlines():
        if not line.startswith(" "):
            inside, current = line.startswith("src/energy_platform/"), None
        elif inside and not line.startswith("   "):
            name, _, rest = line.strip().partition(" ")
            current = name.removesuffix("/").removesuffix(".py")
            entries[current] = rest
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def _enclosed(text: str, opening: int) -> str:
    """The text inside the parenthesis at ``opening`` and its match."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[opening + 1 : i]
    return text[opening + 1 :]


def names(text: str, path: list[str]) -> bool:
    """Whether ``text`` names ``path`` (``["db", "locks.py"]``): a subpackage by ``db/``, and
    what is inside it within the parentheses after that."""
    first, *rest = path
    pattern = rf"(?<![\w/.]){re.escape(first)}"
    if not rest:
        return re.search(pattern + r"(?!\w)", text) is not None
    return any(
        names(_enclosed(text, m.end() - 1), rest) for m in re.finditer(pattern + r"/\s*\(", text)
    )


def unnamed_in_layout(text: str, root: Path = ROOT) -> list[str]:
    """The packages and modules of ``root`` that architecture.md's layout does not name, and the
    modules it names that do not exist."""
    entries = layout_entries(text)
    missing = []
    for part in sorted(p for p in root.iterdir() if p.name not in ("__init__.py", "__pycache__")):
        package = (part / "__init__.py").is_file()
        if (part.suffix == ".py" or package) and part.name.removesuffix(".py") not in entries:
            missing.append(part.name)
        if not package:
            continue
        for path in sorted(part.rglob("*")):
            inside = path.relative_to(part).parts
            if not all(
                (part.joinpath(*inside[:i]) / "__init__.py").is_file()
                for i in range(1, len(inside))
            ):
                continue  # files beside the code (the page's static assets)
            if path.is_dir() and (path / "__init__.py").is_file():
                wanted = [*inside[:-1], inside[-1] + "/"]
            elif path.suffix == ".py" and path.name != "__init__.py":
                wanted = list(inside)
            else:
                continue
            if not names(entries.get(part.name, ""), wanted):
                missing.append("/".join((part.name, *inside)))
    modules = {p.name for p in root.rglob("*.py")}
    named = set(re.findall(r"(?<![\w.])\w+\.py\b", " ".join(entries.values())))
    return missing + [f"{name} (named, but no such module)" for name in sorted(named - modules)]


def test_the_architecture_pages_layer_table_is_allowed() -> None:
    documented = documented_layers(ARCHITECTURE.read_text())
    differ = {
        part: (documented.get(part), ALLOWED.get(part))
        for part in documented.keys() | ALLOWED.keys()
        if documented.get(part) != ALLOWED.get(part)
    }
    assert differ == {}, "docs/architecture.md's layer table and ALLOWED differ: (doc, ALLOWED)"


def test_the_architecture_page_names_every_package_and_module() -> None:
    assert unnamed_in_layout(ARCHITECTURE.read_text()) == [], "name them in docs/architecture.md"


def test_every_domain_package_has_its_test_folder_and_docs_page() -> None:
    domains = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file())
    missing = [
        f"{place} of {domain}"
        for domain in domains
        if domain != "core"
        for place in (f"tests/integration/{domain}/", f"docs/{domain}.md")
        if not (REPOSITORY / place).exists()
    ]
    assert missing == []


def test_no_two_test_files_share_a_name() -> None:
    counts = Counter(p.name for p in (REPOSITORY / "tests").rglob("test_*.py"))
    assert sorted(name for name, n in counts.items() if n > 1) == []


LAYOUT = """
## Layout

```
sql/                      migrations
  functions/              functions
src/energy_platform/
  cli.py                  the command
  live/                   hub.py (the follower), events.py, http.py
  devices/                ingest/ (service.py, store.py), pipeline.py
tests/                    tests
```

## Layers

| package | may import |
|---|---|
| `core` | nothing |
| `live` | `core`, `users` |
| `cli` | `core`, every domain |
"""


def test_a_module_the_layout_does_not_name_is_caught(tmp_path: Path) -> None:
    for module in (
        "cli.py",
        "live/__init__.py",
        "live/hub.py",
        "live/events.py",
        "live/queries.py",
        "devices/__init__.py",
        "devices/ingest/__init__.py",
        "devices/ingest/service.py",
        "devices/ingest/store.py",
        "devices/ingest/pipeline.py",
        "devices/simulator/__init__.py",
        "seeding.py",
    ):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    # pipeline.py is named, but outside ingest/'s parentheses; http.py is named but gone.
    assert unnamed_in_layout(LAYOUT, tmp_path) == [
        "devices/ingest/pipeline.py",
        "devices/simulator",
        "live/queries.py",
        "seeding.py",
        "http.py (named, but no such module)",
    ]


def test_the_layer_table_is_read_as_allowed_holds_it() -> None:
    assert documented_layers(LAYOUT) == {
        "core": set(),
        "live": {"core", "users"},
        "cli": {"core", *DOMAINS},
    }


# The SQL of sql/functions/, held to the same table.
#
# The tokenizer, kept simple on purpose: comments (``--`` to the end of the line, ``/* */`` not
# nested) and string literals (``'...'`` with ``''`` inside; ``E'...'`` too, as long as no
# backslash escapes a quote) are blanked out, so that a name in a COMMENT ON text, a message or
# a remark is no call; a dollar-quoted text is kept, since it is a function's body (or a
# statement it runs) and its calls count. What remains is read for qualified names of the
# project's schemas: ``CREATE [OR REPLACE] FUNCTION cluster.name(`` and ``CREATE [OR REPLACE]
# VIEW cluster.name`` define, and any other ``cluster.name(`` calls a function, a
# ``cluster.name`` without a parenthesis reads a view (a function and a view may share a name:
# cluster.readings). Tables are the migrations', not a file's, and are not followed.
SQL = REPOSITORY / "sql" / "functions"
SQL_SCHEMAS = "cluster|forwarder|provisioning"
SQL_NOISE = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'", re.DOTALL)
SQL_NAME = re.compile(rf"\b(?:{SQL_SCHEMAS})\.\w+")
SQL_DEFINITION = re.compile(
    rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|VIEW)\s+((?:{SQL_SCHEMAS})\.\w+)", re.IGNORECASE
)
SQL_FILE = re.compile(r"\d{2}_([a-z]+)(?:_[a-z0-9_]+)?\.sql")


def sql_code(text: str) -> str:
    """``text`` with its comments and string literals blanked out."""
    return SQL_NOISE.sub(" ", text)


def sql_files(directory: Path = SQL) -> dict[str, str]:
    """Each definition file's name and text, in the order `migrate` applies them."""
    return {p.name: p.read_text() for p in sorted(directory.glob("*.sql"))}


def sql_domain(filename: str) -> str | None:
    """The domain a file belongs to, by its name (``24_engine_energy.sql``: engine)."""
    match = SQL_FILE.fullmatch(filename)
    return match.group(1) if match and match.group(1) in {"core", *DOMAINS} else None


def sql_definitions(files: dict[str, str]) -> dict[tuple[str, str], str]:
    """(``function`` or ``view``, qualified name) -> the first file that defines it."""
    found: dict[tuple[str, str], str] = {}
    for filename, text in files.items():
        for kind, name in SQL_DEFINITION.findall(sql_code(text)):
            found.setdefault((kind.lower(), name), filename)
    return found


def sql_calls(files: dict[str, str]) -> set[tuple[str, str, str]]:
    """(calling file, name, defining file) for every function a file calls and view it reads
    that another file defines."""
    defined = sql_definitions(files)
    found = set()
    for filename, text in files.items():
        code = sql_code(text)
        for match in SQL_NAME.finditer(code):
            call = code[match.end() :].lstrip().startswith("(")
            target = defined.get(("function" if call else "view", match.group()))
            if target is not None and target != filename:
                found.add((filename, match.group(), target))
    return found


def sql_misnamed(files: dict[str, str]) -> list[str]:
    """The files whose name does not start with a part of the layers."""
    return [f for f in files if sql_domain(f) is None]


def sql_upward(files: dict[str, str]) -> list[str]:
    """Calls from one domain's SQL to another's that the layers do not allow."""
    return sorted(
        f"{caller} calls {name} of {target}"
        for caller, name, target in sql_calls(files)
        if (a := sql_domain(caller)) != (b := sql_domain(target))
        and b not in ALLOWED.get(a or "", set())
    )


def sql_cycles(files: dict[str, str]) -> list[list[str]]:
    """The groups of domains whose SQL calls each other, directly or around a loop."""
    graph: dict[str, set[str]] = {}
    for caller, _, target in sql_calls(files):
        a, b = sql_domain(caller) or caller, sql_domain(target) or target
        if a != b:
            graph.setdefault(a, set()).add(b)
    return module_cycles(graph)


def sql_forward(files: dict[str, str]) -> list[str]:
    """Calls of a function or view that a later file defines (it does not exist yet when the
    caller is made: a SQL body fails then, a PL/pgSQL one only works by luck of run time)."""
    return sorted(
        f"{caller} calls {name}, defined later in {target}"
        for caller, name, target in sql_calls(files)
        if target > caller
    )


def test_every_sql_file_is_named_for_its_domain() -> None:
    assert sql_misnamed(sql_files()) == [], "name it NN_<domain>_topic.sql"


def test_no_sql_call_runs_back_up_the_layers() -> None:
    assert sql_upward(sql_files()) == []


def test_no_domains_sql_calls_each_other() -> None:
    assert sql_cycles(sql_files()) == []


def test_no_sql_definition_calls_one_of_a_later_file() -> None:
    assert sql_forward(sql_files()) == []


def test_the_sql_checks_see_the_real_calls() -> None:
    # Not vacuous: the engine's stages price with billing's functions, and the bill reads core.
    calls = sql_calls(sql_files())
    assert ("25_engine_results.sql", "cluster.pricing", "18_billing_pricing.sql") in calls
    assert ("95_billing_bills.sql", "cluster.channel_totals", "90_core_views.sql") in calls


# The circle and the forward calls of c38987e, written as they were: billing's setters queued
# the engine's work while the engine's stages priced with billing's functions, and the setters
# and the engine's parked feeds called functions and read views of later files.
PRICING = """
CREATE OR REPLACE FUNCTION cluster.pricing(p_feed_id bigint) RETURNS float8
LANGUAGE sql AS $$ SELECT 0.25 $$;
"""
ENGINE = """
CREATE OR REPLACE FUNCTION cluster.engine_invalidate_feed(p_feed_id bigint) RETURNS void
LANGUAGE sql AS $$ SELECT $$;
CREATE OR REPLACE FUNCTION cluster.engine_results(p_feed_id bigint) RETURNS float8
LANGUAGE sql AS $$ SELECT cluster.pricing(p_feed_id) $$;
"""
SETTER = """
-- Queues the repricing (cluster.engine_invalidate_feed(feed)), as a comment says.
CREATE OR REPLACE FUNCTION cluster.set_tariff(p_feed_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cluster.engine_invalidate_feed(p_feed_id);
END $$;
COMMENT ON FUNCTION cluster.set_tariff(bigint) IS 'Calls cluster.engine_results(feed) too.';
"""
PARKING = """
CREATE OR REPLACE FUNCTION cluster.parked_notify(p_feed_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster.notifications (user_id, feed_id)
    SELECT f.owner_id, f.id FROM cluster.visible_feeds f WHERE f.id = p_feed_id;
END $$;
"""
VIEWS = """
CREATE VIEW cluster.visible_feeds AS SELECT id, owner_id FROM cluster.feeds;
"""


def test_a_circle_between_domains_sql_is_caught() -> None:
    files = {
        "18_billing_pricing.sql": PRICING,
        "20_engine.sql": ENGINE,
        "25_billing_tariffs.sql": SETTER,
    }
    assert sql_forward(files) == []
    assert sql_cycles(files) == [["billing", "engine"]]
    assert sql_upward(files) == [
        "25_billing_tariffs.sql calls cluster.engine_invalidate_feed of 20_engine.sql"
    ]


def test_a_circle_around_three_domains_sql_is_caught() -> None:
    files = {
        "10_users_a.sql": "CREATE FUNCTION cluster.a() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
        "20_billing_b.sql": "CREATE FUNCTION cluster.b() RETURNS int AS $$ SELECT cluster.a() $$;",
        "30_api_c.sql": "CREATE FUNCTION cluster.c() RETURNS int AS $$ SELECT cluster.b() $$;",
        "40_users_d.sql": "CREATE FUNCTION cluster.d() RETURNS int AS $$ SELECT cluster.c() $$;",
    }
    assert sql_cycles(files) == [["api", "billing", "users"]]


def test_a_call_to_a_later_file_is_caught() -> None:
    files = {
        "18_billing_pricing.sql": PRICING,
        "19_billing_tariffs.sql": SETTER,
        "20_engine.sql": ENGINE,
        "21_engine_parking.sql": PARKING,
        "90_core_views.sql": VIEWS,
    }
    assert sql_forward(files) == [
        "19_billing_tariffs.sql calls cluster.engine_invalidate_feed, defined later in"
        " 20_engine.sql",
        "21_engine_parking.sql calls cluster.visible_feeds, defined later in 90_core_views.sql",
    ]
    assert sql_cycles(files) == [["billing", "engine"]]


def test_a_name_in_a_comment_or_a_string_is_no_call() -> None:
    # SETTER's comment and COMMENT ON text name cluster.engine_results: neither counts.
    files = {"20_engine.sql": ENGINE, "25_billing_tariffs.sql": SETTER}
    assert {(c, n) for c, n, _ in sql_calls(files)} == {
        ("25_billing_tariffs.sql", "cluster.engine_invalidate_feed")
    }
    code = sql_code("SELECT 'it''s cluster.x()' /* cluster.y() */, cluster.z() -- cluster.w()")
    assert code.split() == ["SELECT", ",", "cluster.z()"]


def test_a_function_and_a_view_of_one_name_are_told_apart() -> None:
    files = {
        "85_core_ranges.sql": "CREATE OR REPLACE FUNCTION cluster.readings(a int) RETURNS int"
        " LANGUAGE sql AS $$ SELECT a $$;",
        "90_core_views.sql": "CREATE VIEW cluster.readings AS SELECT * FROM cluster.readings(1);",
        "95_billing_bills.sql": "CREATE FUNCTION cluster.bill() RETURNS int AS"
        " $$ SELECT count(*) FROM cluster.readings $$;",
    }
    assert sql_calls(files) == {
        ("90_core_views.sql", "cluster.readings", "85_core_ranges.sql"),
        ("95_billing_bills.sql", "cluster.readings", "90_core_views.sql"),
    }


def test_a_file_not_named_for_a_domain_is_caught() -> None:
    files = {"10_core_text.sql": "", "21_parking.sql": "", "30_forwarder.sql": "", "5_x.sql": ""}
    assert sql_misnamed(files) == ["21_parking.sql", "5_x.sql"]
