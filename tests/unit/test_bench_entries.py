"""make bench's list of entries (benchmarks/run_all.py)."""

from benchmarks.run_all import BENCHMARKS


def test_every_entry_has_a_key_of_its_own() -> None:
    """The seconds per benchmark are keyed by entry: two alike would lose one's seconds."""
    keys = [bench.key for bench in BENCHMARKS]
    assert len(set(keys)) == len(keys), keys
