"""Money: market prices and their files (price_files.py), tariffs (tariffs.py), a feed's bill
(bills.py) and price curve, their HTTP surface on the data API (http.py, registered by
``api.app.create_app``) and their admin commands (admin.py: ``tariffs``, ``prices``).

The engine prices each 90 s bucket in SQL (sql/functions/18_billing_pricing.sql); nothing of
the engine's Python imports this package (docs/billing.md)."""
