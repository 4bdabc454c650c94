"""The data API: feeds, streams, stream data and notifications over HTTP, the page at `/`, and
the admin commands that manage what it serves (users, feeds, streams)."""
