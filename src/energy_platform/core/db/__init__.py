"""Database access: asyncpg pools for services, the migration runner for the schema."""
