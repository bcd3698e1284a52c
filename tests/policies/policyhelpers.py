"""Helpers for the policy authority tests: policy content builders and table fingerprints."""
from copy import deepcopy

from django.db import connection

from policies.content import BOOTSTRAP_CONTENT


def content(priority=None, rules=None, **defaults) -> dict:
    """Valid schema-v1 content: the bootstrap defaults with ``defaults`` overridden."""
    body = deepcopy(BOOTSTRAP_CONTENT)
    body["defaults"].update(deepcopy(defaults))
    if rules is not None:
        body["rules"] = rules
    if priority is not None:
        body["priority"] = priority
    return body


def table_fingerprint() -> dict:
    """``{table: (row count, digest of every row)}`` for every table in the database: equal
    fingerprints mean no row was inserted, deleted or changed anywhere."""
    import hashlib

    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names()):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows = sorted(repr(r) for r in cursor.fetchall())
            out[table] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
    return out
