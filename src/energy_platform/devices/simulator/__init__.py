"""The simulated devices: ``homebase.py``, a homebase with realistic sensors that publishes
encrypted v4 batches (``make run``'s demo homebase, the tests and the benchmarks use it), and
``command.py``, the ``energy-platform simulate homebase|coap-device`` command around it, which
imports the device libraries only when it runs."""
