"""The engine: 90 s processing, rollups, notification rules, retention and compaction, in SQL."""
