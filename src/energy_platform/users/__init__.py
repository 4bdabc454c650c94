"""The data API's users: who a bearer token belongs to (auth.py) and the admin commands that
add users and hand out their tokens (admin.py)."""
