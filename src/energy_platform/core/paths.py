"""Where the files that ship beside the code are found."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def migrations_dir() -> Path:
    """``sql/``: inside the installed package (wheel, container), else the source checkout's."""
    packaged = Path(str(resources.files("energy_platform"))) / "sql"
    found = packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "sql"
    # A wrong path would read as "nothing to apply" and leave a database empty.
    if not (found / "0001_foundation.sql").is_file():
        raise FileNotFoundError(f"no migrations in {found}")
    return found
