"""After the whole end-to-end run: no log any stack's processes wrote, and no output of its
one-shot commands, carries a channel secret: every log written during the end-to-end suite is
searched for each channel's password and secret."""
import pytest

from .stack import LOG_SWEEP


@pytest.fixture(scope="session", autouse=True)
def no_channel_secret_in_any_e2e_log():
    yield
    leaks = LOG_SWEEP.leaks()
    assert not leaks, "channel secrets in e2e logs:\n" + "\n".join(leaks)
