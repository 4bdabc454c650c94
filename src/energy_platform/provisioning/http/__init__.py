"""The provisioning API: clusters, homebases, pairing, secrets, boot and firmware.

The app is built by ``app.create_app``; it is not imported here, so that the admin commands
of this domain start without loading the web framework.
"""
