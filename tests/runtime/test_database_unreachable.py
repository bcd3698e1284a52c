"""errors.database_unreachable: which database errors fail a worker pass as a whole (an outage,
logged once by the worker loop) and which stay row-level (settled row by row, logged per row)."""
import sqlite3

import psycopg
import pytest
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError

from core.errors import database_unreachable



def wrapped(django_cls, cause):
    exc = django_cls(str(cause))
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize("cause", [
    psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
    psycopg.errors.CannotConnectNow("the database system is starting up"),
    psycopg.errors.ConnectionFailure("connection failure"),
    psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"),
])
def test_lost_or_refused_connections_are_an_outage(cause):
    assert database_unreachable(wrapped(OperationalError, cause))


def test_a_closed_connection_is_an_outage():
    assert database_unreachable(InterfaceError("connection already closed"))


@pytest.mark.parametrize("exc", [
    wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")),
    wrapped(OperationalError, psycopg.errors.SerializationFailure("could not serialize access")),
    wrapped(OperationalError, sqlite3.OperationalError("database is locked")),
    wrapped(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")),
    OperationalError("no driver error attached"),
    DatabaseError("other"),
    ValueError("not a database error"),
])
def test_row_level_errors_are_not(exc):
    assert not database_unreachable(exc)
