from energy_platform.core.cache import BoundedCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_past_its_size_the_oldest_entry_goes_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(3)
    for i, sn in enumerate("ABCD"):
        cache.put(sn, i)
    assert len(cache) == 3
    assert [cache.get(sn) for sn in "ABCD"] == [None, 1, 2, 3]


def test_an_entry_lives_its_ttl_and_no_longer() -> None:
    clock = Clock()
    cache: BoundedCache[str, int] = BoundedCache(10, ttl=60, clock=clock)
    cache.put("A", 1)
    clock.now = 59.9
    assert cache.get("A") == 1
    clock.now = 60.0
    assert cache.get("A") is None
    assert len(cache) == 0  # an expired entry is gone, not just hidden
