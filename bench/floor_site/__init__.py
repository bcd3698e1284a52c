"""The bench's site for ``bench/floor.py``: the project's settings and URLs plus test-only
endpoints (a ladder from a bare ASGI app to the real accept and ACK). Never used by the project:
``uns_project`` does not import it, and it is on the path only when the bench runs uvicorn with
``--app-dir bench``."""
