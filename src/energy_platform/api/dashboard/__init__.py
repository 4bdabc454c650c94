"""The data API's page at ``/``: feeds, streams, charts and notifications in the browser.

Plain HTML and JavaScript modules, no build step; it calls only the public data API, so it is
also the example client for dashboard developers (docs/dashboard.md).
"""
