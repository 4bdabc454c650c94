"""A raw stream's history from outside a device: imports, repairs, and their audit trail."""
