"""Each user's ration of connection time for costly reads (core/http/shares.py): past a burst,
a user's overviews and what-ifs hold at most a share of one backend while anyone else is being
served, and run unrationed when they are served alone."""

from energy_platform.core.http.shares import CostlyReads, PoolShare, Presence, Ration, UserLanes

ALICE, BOB = 1, 2
ALICE_TOKEN, ALICE_OTHER_TOKEN, BOB_TOKEN = b"a" * 32, b"A" * 32, b"b" * 32


class Clock:
    """Time that passes only when told to: the reads' holding and the ration's waits."""

    def __init__(self) -> None:
        self.now = 100.0
        self.meanwhile: list[bytes] = []
        """Tokens served all the while: seen again whenever time passes."""
        self.presence: Presence | None = None

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """The ration's wait: time passes at once, with the others' requests meanwhile."""
        self.now += seconds
        for token in self.meanwhile:
            assert self.presence is not None
            self.presence.seen(token)


def reads(clock: Clock, share: float = 0.25, burst_s: float = 1.0) -> CostlyReads:
    clock.presence = Presence(window_s=1.0, clock=clock)
    return CostlyReads(
        PoolShare(5),
        UserLanes(3),
        Ration(share, burst_s, clock=clock),
        clock.presence,
        sleep=clock.sleep,
    )


async def read(costly: CostlyReads, clock: Clock, user: int, token: bytes, held_s: float) -> float:
    """One read of ``held_s`` seconds; how long it waited for its connection."""
    asked = clock.now
    async with costly.connection(user, token):
        waited = clock.now - asked
        clock.now += held_s
    return waited


def test_presence_tells_whether_another_token_was_served_lately() -> None:
    clock = Clock()
    presence = Presence(window_s=1.0, clock=clock)
    assert not presence.others(ALICE_TOKEN)
    presence.seen(BOB_TOKEN)
    presence.seen(ALICE_TOKEN)
    presence.seen(ALICE_TOKEN)
    assert presence.others(ALICE_TOKEN)  # Bob, before Alice's own requests
    assert presence.others(BOB_TOKEN)
    clock.now += 1.5
    presence.seen(ALICE_TOKEN)
    assert not presence.others(ALICE_TOKEN)  # Bob's request is over a second old
    assert presence.others(BOB_TOKEN)


def test_a_ration_is_paid_off_at_its_share_and_waits_only_past_the_burst() -> None:
    clock = Clock()
    ration = Ration(0.25, 1.0, clock=clock)
    assert ration.wait_s(ALICE) == 0
    ration.charge(ALICE, 3.0)
    assert ration.owed(ALICE) == 3.0
    assert ration.wait_s(ALICE) == 8.0  # 2 s past the burst, paid at 0.25 s a second
    clock.now += 4.0
    assert ration.owed(ALICE) == 2.0
    assert ration.wait_s(ALICE) == 4.0
    assert ration.wait_s(BOB) == 0  # another user's debt is their own
    clock.now += 100
    assert ration.owed(ALICE) == 0


async def test_a_loop_of_reads_while_another_user_is_served_holds_its_share() -> None:
    clock = Clock()
    costly = reads(clock)
    clock.meanwhile = [BOB_TOKEN]  # Bob's data requests go on all the while
    started = clock.now
    held = 0.0
    for _ in range(40):
        costly.presence.seen(BOB_TOKEN)
        await read(costly, clock, ALICE, ALICE_TOKEN, 0.5)
        held += 0.5
    # Over the loop, Alice held connections a quarter of the time, past her burst.
    assert held <= 0.25 * (clock.now - started) + 1.0 + 0.5
    assert held >= 0.25 * (clock.now - started) - 0.5
    # Bob's own reads are not Alice's: his first waits for nothing.
    clock.meanwhile = []
    assert await read(costly, clock, BOB, BOB_TOKEN, 0.5) == 0


async def test_a_user_served_alone_is_not_rationed() -> None:
    clock = Clock()
    costly = reads(clock)
    waits = []
    for _ in range(40):
        costly.presence.seen(ALICE_TOKEN)
        costly.presence.seen(ALICE_OTHER_TOKEN)  # no one else: two tokens of hers count apart
        waits.append(await read(costly, clock, ALICE, ALICE_TOKEN, 0.5))
    assert waits[0] == 0
    assert sum(waits) > 0  # her own second token counts as someone else: she waits
    clock.now += 100  # paid off
    alone = Clock()
    alone.now = clock.now
    costly = reads(alone)
    waits = []
    for _ in range(40):
        costly.presence.seen(ALICE_TOKEN)
        waits.append(await read(costly, alone, ALICE, ALICE_TOKEN, 0.5))
    assert waits == [0] * 40


async def test_a_rationed_read_goes_ahead_once_the_others_have_left() -> None:
    clock = Clock()
    costly = reads(clock)
    costly.presence.seen(BOB_TOKEN)
    await read(costly, clock, ALICE, ALICE_TOKEN, 5.0)  # 4 s past the burst: 16 s to wait
    costly.presence.seen(BOB_TOKEN)
    waited = await read(costly, clock, ALICE, ALICE_TOKEN, 0.1)
    # Bob's last request was at the start of the wait: a second later she goes ahead.
    assert 1.0 <= waited <= 1.0 + 0.25
