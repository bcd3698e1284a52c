"""The documentation's shell snippets, run as a reader would paste them.

Every fenced ``bash`` block of ``docs/tutorial/`` and ``docs/how-to/`` that the line before marks
``<!-- runnable -->`` is run, in page order, in ONE bash session (the tutorial's walkthrough
first: the how-to pages build on its shell) against a real ``manage.py uns_serve`` on a fresh
database, with ``set -e -o pipefail``: a command that fails, or a ``wait_for`` that never sees
its status, fails the test and names the page and block. ``PORT`` and ``HOOK_PORT`` are free
ports; the server's callback destination is the tutorial's demo receiver (so the callbacks
page's example runs without a restart). Blocks not marked are examples that need something a
test cannot give (a TLS proxy, cron, a PostgreSQL superuser, a person at the console).

The default policy is the shipped one, retrying fast (three attempts 50 ms apart), so "about 30 s" waits of the
text take about a second here. Afterwards: no file left in the repository, no channel secret in
the server's log (the session's log sweep).
"""
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from .stack import BASE_DIR, FAST_BACKOFF, LOG_SWEEP, Stack, free_port

pytestmark = pytest.mark.e2e

DOCS = BASE_DIR / "docs"
FIRST = DOCS / "tutorial" / "walkthrough.md"
DEMO_SECRET = "whsec_ZGVtby1zaWduaW5nLWtleQ=="  # the tutorial's demo signing key
CALLBACK_SECRET = "whsec_ZGVtby1jYWxsYmFjay1rZXk="  # the callbacks page's demo key
BLOCK = re.compile(r"^<!-- runnable -->\n```bash\n(.*?)^```$", re.M | re.S)
RUN_TIMEOUT = 900.0  # a hang guard, not a speed claim: the run takes about a minute on a quiet machine


def runnable_blocks() -> list[tuple[str, int, str]]:
    """``(page, n, code)`` for each runnable block: the walkthrough first, then the other
    tutorial pages and the how-to pages in name order."""
    pages = [FIRST] + sorted(p for folder in ("tutorial", "how-to") for p in (DOCS / folder).glob("*.md")
                             if p != FIRST)
    return [(str(page.relative_to(DOCS)), n, code)
            for page in pages for n, code in enumerate(BLOCK.findall(page.read_text()), 1)]


def script(blocks) -> str:
    parts = ["set -e -o pipefail"]
    for page, n, code in blocks:
        parts.append(f"echo \"::: {page} block {n} at $(date +%s)\"\n{code}")
    parts.append("echo '::: done'")
    return "\n".join(parts)


def repository_files() -> set[str]:
    """Untracked paths that git does not ignore, or an empty set outside a git checkout."""
    done = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=BASE_DIR,
                          capture_output=True, text=True)
    return set(done.stdout.splitlines()) if done.returncode == 0 else set()


def test_every_runnable_snippet_of_the_tutorial_and_how_to_pages_works(tmp_path):
    blocks = runnable_blocks()
    assert blocks and blocks[0][0] == "tutorial/walkthrough.md", blocks[:1]
    hook_port = free_port()
    LOG_SWEEP.add_channel(f"http://127.0.0.1:{hook_port}/hook", DEMO_SECRET)
    LOG_SWEEP.add_channel("", CALLBACK_SECRET)
    stack = Stack(tmp_path, f"http://127.0.0.1:{hook_port}/hook", secret=DEMO_SECRET)
    before = repository_files()
    try:
        # the shipped default policy (critical needs an ACK), retrying fast
        from policies.content import BOOTSTRAP_CONTENT

        policy = tmp_path / "uns-default.json"
        policy.write_text(json.dumps({**BOOTSTRAP_CONTENT, "defaults": {
            **BOOTSTRAP_CONTENT["defaults"], "max_attempts": 3, "backoff": FAST_BACKOFF}}))
        stack.manage("uns_policy", "load", str(policy), "--policy-id", "uns-default", "--activate")
        stack.serve(UNS_EMBEDDED_WORKER="true", UNS_CALLBACK_URL=f"http://127.0.0.1:{hook_port}/callback",
                    UNS_CALLBACK_SECRET=CALLBACK_SECRET)
        env = {**stack.env, "PORT": stack.base_url.rsplit(":", 1)[1], "HOOK_PORT": str(hook_port)}
        log = tmp_path / "snippets.log"
        with open(log, "wb") as out:  # a file, not a pipe: the demo receiver keeps its end open
            shell = subprocess.Popen(["bash", "-c", script(blocks)], cwd=BASE_DIR, env=env, start_new_session=True,
                                     stdout=out, stderr=subprocess.STDOUT)
        try:
            shell.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
            raise AssertionError(f"the snippets ran over {RUN_TIMEOUT}s:\n{log.read_text()[-6000:]}\n{stack.logs()}")
        finally:
            try:
                os.killpg(shell.pid, signal.SIGTERM)  # the demo receiver and anything else left running
            except ProcessLookupError:
                pass
        output = log.read_text(errors="replace")
        LOG_SWEEP.outputs.append(output)
        failed = [line for line in output.splitlines() if line.startswith(":::")][-1:]
        assert shell.returncode == 0 and output.rstrip().endswith("::: done"), (
            f"snippet failed at {failed} (exit {shell.returncode}):\n{output[-6000:]}\n{stack.logs()}")
    finally:
        stack.close()
    left = repository_files() - before
    assert not left, f"the snippets left files in the repository: {sorted(left)}"


def test_runnable_blocks_are_found_and_only_bash_is_marked():
    """A ``<!-- runnable -->`` marker before anything but a bash block is a mistake."""
    for page in [*DOCS.glob("tutorial/*.md"), *DOCS.glob("how-to/*.md")]:
        text = page.read_text()
        marked = len(re.findall(r"^<!-- runnable -->$", text, re.M))
        assert marked == len(BLOCK.findall(text)), page


def test_the_readme_walkthrough_is_the_tutorials_tested_first_half():
    """Each command line of the README's walkthrough block is a line of a runnable block of the
    tutorial's walkthrough, so the README's copy is as tested as the tutorial."""
    readme = (BASE_DIR / "README.md").read_text()
    section = readme[readme.index("## Walkthrough"):]
    block = re.search(r"^```sh\n(.*?)^```$", section, re.M | re.S).group(1)
    tested = {line.strip() for code in BLOCK.findall(FIRST.read_text()) for line in code.splitlines()}
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert commands and [line for line in commands if line not in tested] == []
