"""The stores: the operation log interface and its backends (SQLite now).

The one place the host stand touches a database; imported by the service layer, never by
the engine's rules.
"""
