.PHONY: run test install bench
install:
	scripts/bootstrap.sh

# Embedded mode: SQLite file in var/, HTTP + WebSocket + worker loops in one process on :8000.
run: install
	cd frontend && npm install --no-audit --no-fund && npx --no vite build
	.venv/bin/python manage.py migrate --no-input
	.venv/bin/python manage.py collectstatic --no-input -v 0   # var/static: hashed, gzip + Brotli (WhiteNoise serves it)
	.venv/bin/python manage.py uns_serve --host $${HOST:-127.0.0.1} --port $${PORT:-8000}

# The whole suite, on SQLite and on PostgreSQL (started if it is not running).
test:
	scripts/test.sh

# UNS against the pgbench reference on the same PostgreSQL (DATABASE_URL or 127.0.0.1:5432), see bench/README.md.
# BENCH_ARGS, e.g. "--only accept,ack --seconds 5".
bench: install
	.venv/bin/python bench/run.py $${BENCH_ARGS}
