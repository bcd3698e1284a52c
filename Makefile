.PHONY: run test install bench docs reference
install:
	scripts/bootstrap.sh

# Embedded mode: SQLite file in var/, HTTP + WebSocket + worker loops in one process on :8000.
# Installs, builds the console, migrates and collects static files first, each step only when its
# inputs changed since the last run (scripts/run.sh).
run:
	scripts/run.sh

# The whole suite, on SQLite and on PostgreSQL (started if it is not running).
test:
	scripts/test.sh

# UNS against the pgbench reference on the same PostgreSQL (DATABASE_URL or 127.0.0.1:5432), see bench/README.md.
# BENCH_ARGS, e.g. "--only accept,ack --seconds 5".
bench: install
	.venv/bin/python bench/run.py $${BENCH_ARGS}

# The documentation site (docs/, mkdocs.yml) into var/site, strict: a broken link, a missing page or
# a reference page out of date with the code fails it. `make reference` regenerates docs/reference/.
docs: install
	.venv/bin/python scripts/gen_reference.py --check
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

reference: install
	.venv/bin/python scripts/gen_reference.py
