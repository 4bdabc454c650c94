"""Live streams of a feed: ``GET /feeds/{id}/live`` (Server-Sent Events) over the live log that
ingest and the engine write (docs/api.md#live).

queries.py: the reader's statements; events.py: an event as it goes on the wire; hub.py: the one
follower of the log per API process and its clients; http.py: the endpoint; pruning.py: the
engine's round that keeps ``EP_LIVE_REPLAY_S`` of it.
"""
