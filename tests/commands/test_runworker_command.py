"""``manage.py runworker`` must be the UNS worker, not Channels' channel worker of the same name."""
from django.core.management import get_commands, load_command_class


def test_runworker_resolves_to_the_uns_worker_loops():
    app = get_commands()["runworker"]
    assert app == "notifications"
    command = load_command_class(app, "runworker")
    assert "dispatch, timeout, callback" in command.help


def test_a_metrics_port_in_use_fails_before_the_loops_start(db, monkeypatch):
    """``--metrics-port`` on a port another socket holds: a CommandError naming it, and no loop
    was started."""
    import socket

    import pytest
    from django.core.management import CommandError, call_command

    from notifications.runtime.worker import Worker

    started = []
    monkeypatch.setattr(Worker, "start", lambda self: started.append(self))
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(CommandError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            call_command("runworker", "--metrics-port", str(port))
    assert started == []
