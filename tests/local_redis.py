"""Where the tests find a Redis (import as ``from local_redis import answering_redis_url``:
``tests/`` is on the path through its conftest)."""
import os


def answering_redis_url() -> str | None:
    """``UNS_TEST_REDIS_URL`` (scripts/test.sh sets it for both legs), else ``REDIS_URL``, else
    the usual ``redis://127.0.0.1:6379/0`` when it answers a PING within 1 s; None when none is
    set and nothing answers there. The one lookup of the suite: tests that need Redis skip (a
    failure in CI, tests/conftest.py) on None; the e2e stacks start a redis-server of their own."""
    url = os.environ.get("UNS_TEST_REDIS_URL") or os.environ.get("REDIS_URL")
    if url:
        return url
    import redis

    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_timeout=1).ping()
    except redis.RedisError:
        return None
    return "redis://127.0.0.1:6379/0"
