"""Disabling a channel races the activation of a policy that routes to it (PostgreSQL, real
connections): ``channels.disable`` checks the ACTIVE set under the intake's revision lock
(``FOR SHARE``), activation holds it exclusively and refuses a disabled channel, so exactly one
of the two wins every round; never a disabled channel that the ACTIVE set routes to."""
import pytest

from core.errors import Conflict, InvalidRequest
from notifications.models import Channel
from notifications.runtime import channels
from policies import resolution, store
from policies.content import BOOTSTRAP_CONTENT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROUNDS = 8


def routing_to(name):
    return {**BOOTSTRAP_CONTENT, "defaults": {**BOOTSTRAP_CONTENT["defaults"], "channels": ["console", name]}}


def test_disable_and_an_activation_routing_to_it_never_both_win(race):
    for r in range(ROUNDS):
        name = f"pager-{r}"
        channels.create(name, "webhook", {"url": "http://127.0.0.1:9/x"}, actor="setup")
        draft = store.create_draft("uns-default", routing_to(name), actor="setup")

        def step(i, name=name, version=draft.version):
            try:
                if i == 0:
                    channels.disable(name, actor="ops")
                else:
                    store.activate("uns-default", version, actor="admin")
                return "won"
            except (Conflict, InvalidRequest) as exc:
                return exc.code

        results, pids = race(2, step)
        assert len(set(pids)) == 2
        assert sorted(results) in (["channel_routed", "won"], ["invalid_policy_content", "won"]), results
        enabled = Channel.objects.get(name=name).enabled
        routed = bool(store.routes_to(resolution.read_current().policies, name))
        assert enabled or not routed, f"round {r}: {name} is disabled but the ACTIVE set routes to it"
        if routed:  # put the default back for the next round
            back = store.create_draft("uns-default", BOOTSTRAP_CONTENT, actor="setup")
            store.activate("uns-default", back.version, actor="setup")
