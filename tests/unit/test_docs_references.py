"""Docs that cannot point nowhere: every repository path the README, docs/ and the package's
docstrings and comments cite exists, and every `EP_` variable the docs name is a setting (or
a former name of one, or a variable of the project's own scripts, benchmarks or tests)."""

from __future__ import annotations

import re
from pathlib import Path

from energy_platform.core.settings import RENAMED, _variable_names

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "energy_platform"
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
]
DOMAINS = "|".join(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
# A path from the repository's root (src/..., sql/..., docs/...), or one inside the package as
# docs name its modules (billing/admin.py, core/http/problems.py).
CITED = re.compile(
    rf"(?<![\w/.-])((?:src|sql|tests|docs|benchmarks|scripts|deploy|web|\.ci)/[\w./*-]*[\w*]"
    rf"|(?:{DOMAINS})/[\w/*-]+\.(?:py|js|sql|html|css))"
)
# Placeholders for a kind of file, not a file: sql/NNNN_name.sql, sql/functions/NN_name.sql.
TEMPLATE = re.compile(r"N{2,}_name")
VARIABLE = re.compile(r"\bEP_[A-Z0-9_]*[A-Z0-9](\*|_\*)?")


def exists(cited: str) -> bool:
    """Whether a cited path (perhaps with a glob, perhaps a migration by its number alone, such
    as sql/0026) names something in the repository or the package."""
    candidates = [
        cited,
        f"src/energy_platform/{cited}",
        f"src/energy_platform/api/dashboard/{cited}",
    ]
    if re.fullmatch(r"sql/\d{4}", cited):
        candidates.append(f"{cited}_*.sql")
    return any(any(ROOT.glob(c)) for c in candidates)


def cited_paths(text: str) -> set[str]:
    return {
        match.rstrip(".").split("::")[0]
        for match in CITED.findall(text)
        if not TEMPLATE.search(match)
    }


def test_every_path_the_docs_cite_exists() -> None:
    missing = {
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in DOCS
        for path in cited_paths(doc.read_text())
        if not exists(path)
    }
    assert sorted(missing) == []


def test_every_path_the_packages_docstrings_and_comments_cite_exists() -> None:
    missing = {
        f"{module.relative_to(ROOT)}: {path}"
        for module in PACKAGE.rglob("*.py")
        for path in cited_paths(module.read_text())
        if not exists(path)
    }
    assert sorted(missing) == []


def test_every_variable_the_docs_name_is_a_setting_or_a_scripts() -> None:
    known = set(_variable_names().values()) | set(RENAMED)
    scripts = {ROOT / "compose.yaml", ROOT / "Makefile", ROOT / "Dockerfile"}
    scripts |= {p for p in (ROOT / "scripts").iterdir() if p.is_file()}
    scripts |= {p for p in (ROOT / "deploy").rglob("*") if p.is_file()}
    scripts |= {*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "tests").rglob("*.py")}
    known |= {m.group(0) for p in scripts for m in VARIABLE.finditer(p.read_text(errors="replace"))}
    unknown = set()
    for doc in DOCS:
        for match in VARIABLE.finditer(doc.read_text()):
            name, wildcard = match.group(0).rstrip("*").rstrip("_"), match.group(1)
            named = any(k.startswith(name + "_") for k in known) if wildcard else name in known
            if not named:
                unknown.add(f"{doc.relative_to(ROOT)}: {match.group(0)}")
    assert sorted(unknown) == []


def test_a_path_that_does_not_exist_is_found() -> None:
    # The check itself: a cited module that is not there, and one that is.
    assert cited_paths("see `billing/nowhere.py` and `billing/admin.py::set_tariff`") == {
        "billing/nowhere.py",
        "billing/admin.py",
    }
    assert not exists("billing/nowhere.py")
    assert exists("billing/admin.py")
    assert exists("sql/0026")
