"""The keys of the platform's advisory locks, by name.

Every advisory lock the platform takes is named here; SQL takes them by the same names through
``cluster.lock_key(name)`` (sql/functions/11_core_locks.sql), whose list a test holds equal to this
one. The numbers never change: processes of two releases running against one database during an
upgrade must still exclude each other.

A key used alone is a bigint (``pg_advisory_xact_lock(key)``). A key with a row's id beside it
is the first of two integers (``pg_advisory_xact_lock(key, id % 2^31)``), so it must fit an
integer. PostgreSQL keeps the two forms apart, so only keys of one form could clash; all are
distinct anyway, so that a key in ``pg_locks`` names one lock.
"""

from __future__ import annotations

from enum import IntEnum, unique


@unique
class LockKey(IntEnum):
    # Session-level: concurrent `migrate` runs (several workers starting at once) would apply
    # one migration twice.
    MIGRATIONS = 0x45505F4D4947  # "EP_MIG"
    # Alone: one round of the notification rules at a time across engine processes, so that no
    # two evaluate the same round; a busy lock skips the round.
    NOTIFICATION_RULES = 4542573153
    # With a feed id: one processing worker computes a feed at a time (two would upsert and
    # delete the same points); the others skip the feed.
    ENGINE_FEED = 1162692948
    # With a stream id: one worker recomputes a stream's hours and days at a time, and the
    # recomputation sees every point committed before the lock.
    ROLLUP_STREAM = 1380928588
    # With a stream id: compaction takes it exclusively, writers into an old day share it, so
    # that a write is seen by the compaction or lands after the day was moved back.
    COMPACTION_STREAM = 1129270864
    # Alone, from a writer's last statement to its commit: live events get their positions in
    # commit order (cluster.live_publish, docs/api.md#live).
    LIVE_LOG = 1279874629

    @property
    def sql_name(self) -> str:
        """The name ``cluster.lock_key`` knows it by."""
        return self.name.lower()
