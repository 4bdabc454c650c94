"""The writers' side of the live log (sql/functions/70_live.sql, docs/api.md#live).

A writer stages its events in the statements that write its points (``cluster.live_stage``)
and runs :data:`LIVE_PUBLISH` as its transaction's last statement: the events get their
positions under one advisory lock held to the commit, so positions follow commit order.
Ingest's batches, the engine's processing transactions and its notification rounds (the
feed's ``prices`` event, ``cluster.live_stage_prices``) write this way; the data API's
``/feeds/{id}/live`` reads what they committed (``live/``).
"""

LIVE_PUBLISH = "SELECT cluster.live_publish()"
"""Last statement before COMMIT: number this transaction's staged live events."""
