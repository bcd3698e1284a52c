"""``manage.py uns_maintain``: the shell over ``maintenance.maintain`` (dry run unless --apply)."""
import functools
import io
import json
import signal

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from notifications.management.commands import uns_maintain
from notifications.models import Event, Notification
from notifications.runtime import maintenance

pytestmark = pytest.mark.django_db

DAY = 86400.0


@pytest.fixture
def old_work(rt, clock, channel, monkeypatch):
    """Three delivered notifications accepted 100 days ago; the command uses ``rt``."""
    monkeypatch.setattr(apps.get_app_config("notifications"), "process_runtime", rt)
    ids = []
    for _ in range(3):
        ids.append(rt.accept("alice", {"source": "billing", "title": "disk full", "channels": ["ops-hook"]})
                   .notification.id)
        clock.advance(1)
        rt.dispatch()
    clock.advance(100 * DAY)
    return ids


def maintain(*args):
    out = io.StringIO()
    call_command("uns_maintain", *args, stdout=out)
    return out.getvalue()


def receipts():
    return list(Event.objects.filter(kind="RETENTION_APPLIED").order_by("at", "id"))


def test_the_default_is_a_dry_run_that_prints_counts_per_kind_and_the_cutoff(old_work, clock):
    out = maintain("--older-than", "30")
    assert "DRY RUN" in out and "would delete:" in out
    assert Notification.objects.count() == 3 and not receipts()
    lines = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("  ")}
    assert lines["uns_notifications"] == "3" and lines["uns_dedup"] == "0"
    assert int(lines["uns_events"]) == Event.objects.count()
    assert "DELIVERED 3" in out
    assert f"({clock.now - 30 * DAY:.3f})" in out and "cutoff: 2027-" in out  # ISO and epoch seconds


def test_apply_deletes_and_writes_a_receipt(old_work):
    out = maintain("--apply", "--older-than", "30", "--operator", "oscar")
    assert out.startswith("APPLIED") and "receipts: 1 RETENTION_APPLIED" in out
    assert Notification.objects.count() == 0
    [receipt] = receipts()
    assert receipt.payload["operator"] == "oscar" and sorted(receipt.payload["notification_ids"]) == sorted(old_work)
    assert Event.objects.exclude(kind="RETENTION_APPLIED").count() == 0


def test_max_rows_stops_and_a_second_run_goes_on(old_work):
    out = maintain("--apply", "--batch-size", "1", "--max-rows", "2")
    assert "stopped at --max-rows" in out and Notification.objects.count() == 1
    out = maintain("--apply")
    assert "stopped" not in out and Notification.objects.count() == 0 and len(receipts()) == 3


def test_an_archive_is_written_and_named(old_work, tmp_path):
    out = maintain("--apply", "--archive", str(tmp_path / "a"))
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["counts"]["uns_notifications"] == 3 and "1 part(s) written and verified" in out


def test_a_failed_verification_exits_non_zero_and_deletes_nothing(old_work, tmp_path, monkeypatch):
    def corrupt(files):
        files["uns_notifications"].write_bytes(b"not gzip")

    monkeypatch.setattr(maintenance, "maintain", functools.partial(maintenance.maintain, after_write=corrupt))
    with pytest.raises(CommandError) as err:
        maintain("--apply", "--archive", str(tmp_path))
    assert "archive verification failed for part-00001-uns_notifications.jsonl.gz" in str(err.value)
    assert "Nothing of that batch was deleted" in str(err.value) and err.value.returncode == 1
    assert Notification.objects.count() == 3
    assert [r.payload["archive"]["verified"] for r in receipts()] == [False]


@pytest.mark.parametrize("args, message", [
    (["--older-than", "abc"], "neither a number of days nor an ISO 8601 date"),
    (["--older-than", "-3"], "non-negative"),
    (["--older-than", "2999-01-01"], "in the future"),
    (["--batch-size", "-1"], "batch size must be an integer from 1"),
    (["--batch-size", "abc"], "invalid int value"),
    (["--max-rows", "0"], "max rows must be a positive integer"),
])
def test_bad_input_is_a_clear_command_error(old_work, args, message):
    with pytest.raises(CommandError, match=message):
        maintain("--apply", *args)
    assert Notification.objects.count() == 3 and not receipts()


def test_sigterm_stops_after_the_batch_under_way_and_exits_3(old_work, monkeypatch):
    real = maintenance.maintain

    def signalled(*args, should_stop, **kwargs):
        calls = iter([False, True])
        signal.raise_signal(signal.SIGTERM)  # sets the command's stop flag; checked before each batch
        assert should_stop()
        return real(*args, should_stop=lambda: next(calls), **kwargs)

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(maintenance, "maintain", signalled)
    with pytest.raises(CommandError, match="interrupted") as err:
        maintain("--apply", "--batch-size", "1")
    assert err.value.returncode == uns_maintain.EXIT_INTERRUPTED
    assert Notification.objects.count() == 2  # one batch committed, with its receipt
    assert len(receipts()) == 1 and signal.getsignal(signal.SIGTERM) is before


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_drawn_only_on_a_terminal_and_not_with_no_progress(old_work, monkeypatch):
    monkeypatch.setenv("TERM", "xterm")  # rich draws no live bar on a "dumb" terminal
    for name in ("NO_COLOR", "TTY_INTERACTIVE", "TTY_COMPATIBLE", "CI"):
        monkeypatch.delenv(name, raising=False)
    tty = _Tty()
    call_command("uns_maintain", stdout=tty)
    assert "notifications" in tty.getvalue() and "\x1b[" in tty.getvalue()  # rich's bar (ANSI)
    quiet = _Tty()
    call_command("uns_maintain", "--no-progress", stdout=quiet)
    plain = io.StringIO()
    call_command("uns_maintain", stdout=plain)
    assert "\x1b[" not in quiet.getvalue() and "\x1b[" not in plain.getvalue()
    assert quiet.getvalue() == plain.getvalue()


def test_the_command_is_registered_with_a_help_text():
    from django.core.management import get_commands

    assert get_commands()["uns_maintain"] == "notifications"
    assert "dry run" in uns_maintain.Command.help.lower()
