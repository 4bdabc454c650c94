"""Devices' side of a cluster: ingest (MQTT batches and the CoAP data server) and the homebase
simulator."""
