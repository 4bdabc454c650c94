"""Device adapters: MQTT ingest, CoAP and TFTP servers, codecs and simulators."""
