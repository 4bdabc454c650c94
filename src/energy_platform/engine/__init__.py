"""The engine: 90 s processing, notification rules and forwarder deliveries, in SQL."""
