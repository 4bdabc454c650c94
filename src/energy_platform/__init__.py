"""Energy platform: device ingestion, 90 s processing, data API, provisioning and forwarding."""
