"""HTTP surfaces: the data API, the provisioning API and the forwarder API."""
