"""The data API's users: who a bearer token belongs to and what it may do (auth.py), their named
read and write tokens (tokens.py, over HTTP in http.py), when each token was last used
(usage.py) and the admin commands that add users and hand out their tokens (admin.py)."""
