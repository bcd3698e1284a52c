"""``manage.py runworker`` must be the UNS worker, not Channels' channel worker of the same name."""
from django.core.management import get_commands, load_command_class


def test_runworker_resolves_to_the_uns_worker_loops():
    app = get_commands()["runworker"]
    assert app == "notifications"
    command = load_command_class(app, "runworker")
    assert "dispatch, timeout, callback" in command.help
