"""The data API: feeds, streams, stream data and notifications ({base_url})."""

from energy_platform.api.data.app import create_app

__all__ = ["create_app"]
