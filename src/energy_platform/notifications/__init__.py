"""Notifications of a user: the rules the engine evaluates to create them (rules.py) and their
HTTP surface on the data API (http.py, registered by ``api.app.create_app``)."""
