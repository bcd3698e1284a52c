"""``manage.py uns_policy``: the policy lifecycle from the shell (a shell over ``policies.store``).

    uns_policy load FILE [--policy-id ID] [--activate]   JSON or YAML (.yaml/.yml) file -> new DRAFT
    uns_policy list [--status DRAFT|ACTIVE|RETIRED] [--policy-id ID]
    uns_policy show POLICY_ID VERSION
    uns_policy activate POLICY_ID VERSION
    uns_policy retire POLICY_ID VERSION
    uns_policy clone POLICY_ID VERSION [--to NEW_POLICY_ID]
    uns_policy current [--json]                          the current revision and its ACTIVE set
    uns_policy simulate REQUEST_JSON [--principal NAME]  what intake would resolve; creates nothing

A file holds policy content, or ``{"policy_id": ..., "content": {...}}``. A file's ``status`` (or
any lifecycle field) is ignored: a loaded policy is always a new DRAFT, so a serialized
historical ACTIVE policy can never revive a RETIRED version. ``--actor`` (default
``cli:<os user>``) is recorded in the audit trail.
"""
import getpass
import json
import time

from django.core.management.base import CommandError

from notifications.management.base import OperationalCommand
from core.errors import UNSError
from policies import selectors, simulation, store
from policies.models import STATUSES
from policies.bootstrap import is_yaml_path, parse_policy_text


def _default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "cli"


def read_policy_file(path: str) -> tuple[str | None, dict]:
    """``(policy_id or None, content)`` from a JSON or YAML file. Raises ``CommandError``."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = parse_policy_text(fh.read(), yaml_syntax=is_yaml_path(path))
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read {path}: {exc}")
    if isinstance(data, dict) and "content" in data and isinstance(data.get("content"), dict):
        return data.get("policy_id"), data["content"]
    return None, data


class Command(OperationalCommand):
    help = "Load, list, show, activate, retire and clone policy versions; show the current revision."

    def add_arguments(self, parser):
        parser.add_argument("--actor", default=None, help="recorded in the audit trail (default cli:<user>)")
        sub = parser.add_subparsers(dest="action", required=True)
        load = sub.add_parser("load", help="store a JSON or YAML policy file as a new DRAFT")
        load.add_argument("file")
        load.add_argument("--policy-id", default=None)
        load.add_argument("--activate", action="store_true", help="activate the new draft")
        listing = sub.add_parser("list")
        listing.add_argument("--status", choices=STATUSES)
        listing.add_argument("--policy-id", default=None)
        for name in ("show", "activate", "retire", "clone"):
            p = sub.add_parser(name)
            p.add_argument("policy_id")
            p.add_argument("version", type=int)
            if name == "clone":
                p.add_argument("--to", default=None, help="clone into another policy id")
        current = sub.add_parser("current")
        current.add_argument("--json", action="store_true")
        sim = sub.add_parser("simulate")
        sim.add_argument("request", help="a SendNotificationRequest as JSON")
        sim.add_argument("--principal", default="cli")

    def handle(self, *args, action, **opts):
        actor = opts["actor"] or _default_actor()
        try:
            getattr(self, f"do_{action}")(actor, opts)
        except UNSError as exc:
            errors = "".join(f"\n  {e.get('field')}: {e.get('message')}" for e in exc.extra.get("errors", []))
            raise CommandError(f"{exc.code}: {exc.detail}{errors}")

    def _print_version(self, item: dict) -> None:
        self.stdout.write(f"{item['policy_id']}\tv{item['version']}\t{item['status']}\t"
                          f"{(item['content_hash'] or '-')[:12]}\t{item['description']}")

    def do_load(self, actor, opts):
        file_policy_id, content = read_policy_file(opts["file"])
        policy_id = opts["policy_id"] or file_policy_id
        if not policy_id:
            raise CommandError("name the policy: --policy-id ID, or a file {\"policy_id\": ..., \"content\": {...}}")
        row = store.create_draft(policy_id, content, actor=actor)
        self.stdout.write(f"created {row.policy_id} v{row.version} (DRAFT)")
        if opts["activate"]:
            self._report(store.activate(row.policy_id, row.version, actor=actor), "activated")

    def do_list(self, actor, opts):
        for item in selectors.list_versions(status=opts["status"], policy_id=opts["policy_id"]):
            self._print_version(item)

    def do_show(self, actor, opts):
        row, content = selectors.get_version(opts["policy_id"], opts["version"])
        self.stdout.write(json.dumps(selectors.version_view(row, content=content, with_content=True), indent=2))

    def _report(self, result: store.Transition, verb: str):
        p = result.policy
        if not result.changed:
            self.stdout.write(f"{p.policy_id} v{p.version} is already {p.status} (revision {result.revision})")
            return
        replaced = f"; retired v{result.replaced.version}" if result.replaced is not None else ""
        self.stdout.write(f"{verb} {p.policy_id} v{p.version}{replaced}; revision {result.revision}")

    def do_activate(self, actor, opts):
        self._report(store.activate(opts["policy_id"], opts["version"], actor=actor), "activated")

    def do_retire(self, actor, opts):
        self._report(store.retire(opts["policy_id"], opts["version"], actor=actor), "retired")

    def do_clone(self, actor, opts):
        row = store.clone(opts["policy_id"], opts["version"], actor=actor, new_policy_id=opts["to"])
        self.stdout.write(f"created {row.policy_id} v{row.version} (DRAFT) from {row.cloned_from}")

    def do_current(self, actor, opts):
        view = selectors.current_view()
        if opts["json"]:
            self.stdout.write(json.dumps(view))
            return
        if view is None:
            self.stdout.write("no revision yet: the first intake bootstraps revision 1")
            return
        self.stdout.write(f"revision {view['revision']} ({view['reason']}) {view['snapshot_hash'][:12]}")
        for entry in view["active"]:
            self.stdout.write(f"  {entry['policy_id']} v{entry['version']} {entry['content_hash'][:12]}")

    def do_simulate(self, actor, opts):
        try:
            request = json.loads(opts["request"])
        except ValueError as exc:
            raise CommandError(f"the request is not JSON: {exc}")
        self.stdout.write(json.dumps(simulation.simulate(opts["principal"], request, now=time.time()), indent=2))
