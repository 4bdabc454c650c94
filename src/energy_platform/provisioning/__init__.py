"""The provisioning domain: serial numbers, secrets, rate limits and the SQL behind them."""
