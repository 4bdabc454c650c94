"""The forwarder: customers' HTTP surface (http/), the delivery loop (delivery/), the
destination checks both use, and the admin commands for customers."""
