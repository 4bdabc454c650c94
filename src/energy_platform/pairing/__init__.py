"""The cluster's side of pairing: its client of the provisioning API, homebase pairings and the
homebases' broker accounts, and the admin commands that reconcile them."""
