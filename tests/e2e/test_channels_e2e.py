"""End to end for the email and apprise channels: ``manage.py uns_channel create`` makes them,
``manage.py uns_serve`` (embedded worker loops, DEBUG logging) delivers through a real SMTP server
(aiosmtpd) and a real HTTP receiver (Apprise's ``json://`` and ``ntfy://`` forms), each provider
failing once first (SMTP 451, HTTP 500) so the retry path runs; then every log the processes
wrote, and the /ui detail, is searched for the channels' passwords."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from channel_servers import SMTP_PASSWORD, SMTP_USER, start_http, start_smtp, stop_http

from .stack import LOG_SWEEP, Stack, wait_for

pytestmark = pytest.mark.e2e

APPRISE_PASSWORD = "e2e-Apprise-pw-7Q"
PRINCIPAL = "e2e-channels"  # sends, and reads /ui


def create_channel(stack, name, *args, secret):
    """``uns_channel create NAME ARGS`` with the channel's secret on standard input (never on
    argv), registered with the session's log sweep (``tests/e2e/conftest.py``)."""
    for part in secret.split():
        LOG_SWEEP.add_channel(part, part)  # each Apprise URL and its password
    LOG_SWEEP.add_channel("", secret)
    return stack.manage("uns_channel", "--skip-checks", "create", name, *args, "--secret-stdin", input=secret + "\n")


@pytest.fixture(scope="module")
def servers():
    smtp, http = start_smtp(), start_http()
    yield smtp, http
    smtp.stop()
    stop_http(http)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, servers):
    smtp, http = servers
    s = Stack(tmp_path_factory.mktemp("channels"), f"http://127.0.0.1:{http.port}/hook", secret="e2e-hook-secret")
    urls = (f"json://uns:{APPRISE_PASSWORD}@127.0.0.1:{http.port}/chat "
            f"ntfy://uns:{APPRISE_PASSWORD}@127.0.0.1:{http.port}/ops "
            f"json://127.0.0.1:{http.port}/t/{APPRISE_PASSWORD}")  # a token in the path, as many services
    try:
        with ThreadPoolExecutor(3) as pool:  # each manage.py start costs seconds: side by side
            jobs = [pool.submit(s.manage, "uns_token", "--skip-checks", "create", PRINCIPAL, "--groups",
                                "producer,operator,console"),
                    pool.submit(create_channel, s, "mail", "--kind", "email", "--to", "oncall@example.com",
                                "--from", "uns@example.net", "--smtp-host", "127.0.0.1", "--smtp-port",
                                str(smtp.port), "--smtp-security", "none", "--smtp-user", SMTP_USER, "--timeout",
                                "5", secret=SMTP_PASSWORD),
                    pool.submit(create_channel, s, "chat", "--kind", "apprise", "--timeout", "5", secret=urls)]
            s.tokens[PRINCIPAL] = jobs[0].result().strip()
            for job in jobs[1:]:
                job.result()
        s.server = s.serve(UNS_EMBEDDED_WORKER="true", UNS_LOG_LEVEL="DEBUG")
    except BaseException:
        s.close()
        raise
    yield s
    codes = s.close()
    assert all(rc == 0 for rc in codes.values()), f"unclean exit {codes}\n{s.logs()}"


def submit(stack, channels, **fields) -> str:
    body = {"source": "e2e", "title": "disk full 💥", "body": "db-1 at 97 %", "channels": channels, **fields}
    with stack.client(PRINCIPAL) as client:
        response = client.post("/api/v1/notifications", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_email_and_apprise_deliver_after_a_failure_and_leak_no_password(stack, servers):
    smtp, http = servers
    smtp.inbox.data_replies.append("451 4.3.0 try again later")
    http.receiver.statuses.append(500)  # the first Apprise URL (json://) fails once

    mail_id = submit(stack, ["mail"])
    chat_id = submit(stack, ["chat"], severity="warning")
    mail = stack.wait_state(mail_id, "DELIVERED", lambda d: d["status"] == "DELIVERED", PRINCIPAL)
    chat = stack.wait_state(chat_id, "DELIVERED", lambda d: d["status"] == "DELIVERED", PRINCIPAL)

    assert mail["attempts"] == 2 and chat["attempts"] == 2
    refused, accepted = [m for _, m, _ in smtp.inbox.received]
    assert refused["Message-ID"] == accepted["Message-ID"] == f"<uns.{mail_id}.1@example.net>"
    assert accepted["Subject"] == "[INFO] disk full 💥" and smtp.inbox.logins == [SMTP_USER, SMTP_USER]
    assert [(r["path"], r["status"]) for r in http.receiver.requests] == [
        ("/chat", 500), ("/", 200), (f"/t/{APPRISE_PASSWORD}", 200), ("/chat", 200)]  # only the failed URL again

    with stack.client(PRINCIPAL) as client:
        ui = [client.get(f"/ui/notifications/{nid}") for nid in (mail_id, chat_id)]
    assert all(r.status_code == 200 for r in ui)
    # Every log line the server wrote (DEBUG: Apprise's and urllib3's request lines included).
    logs = wait_for(lambda: "\n".join(p.output() for p in stack.processes) or None, "server logs")
    assert "JSON POST URL: http://127.0.0.1" in logs  # Apprise DEBUG lines were written
    for secret in (SMTP_PASSWORD, APPRISE_PASSWORD):
        assert secret not in logs
        assert all(secret not in r.text for r in ui)
