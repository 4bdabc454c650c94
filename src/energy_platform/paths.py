"""Where the files that ship beside the code are found."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def migrations_dir() -> Path:
    """``sql/``: inside the installed package (wheel, container), else the source checkout's."""
    packaged = Path(str(resources.files("energy_platform"))) / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "sql"
