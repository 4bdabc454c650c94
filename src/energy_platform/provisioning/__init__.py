"""Provisioning: clusters, homebases, pairing, secrets, boot and firmware: its HTTP API (http/),
CoAP config resource, TFTP images, queries, crypto and admin commands."""
