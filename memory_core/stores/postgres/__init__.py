"""The PostgreSQL store: many memories in one database, shared by every host that serves them."""
