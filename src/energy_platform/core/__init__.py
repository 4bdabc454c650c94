"""The building blocks every domain stands on: settings, errors, the fault policy, background
loops, database pools, HTTP/CoAP/TFTP servers, device codecs, serials and rate limits. Nothing
here imports a domain package (tests/unit/test_layers.py)."""
