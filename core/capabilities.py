"""The capabilities: what a principal may do, as the Django permissions (``"app_label.codename"``)
that grant it, named once. ``notifications.access`` checks them; ``notifications.seed`` grants
``GROUP_CAPABILITIES`` to the seeded groups (it never removes a grant).

Spec: DESIGN.md (capabilities, fail closed).
"""

SEND = "notifications.send_notification"
RESPOND = "notifications.respond_notification"
OPERATE_DLQ = "notifications.operate_dlq"
VIEW_CONSOLE = "notifications.view_console"
MANAGE_POLICIES = "policies.manage_policies"
# Silences and maintenance windows are the operators' (the capability that operates the DLQ and
# the channels): create, edit, expire and preview. Reading them needs VIEW_CONSOLE.
SILENCE = OPERATE_DLQ

# The capability each bulk action (``runtime.bulk``) needs: the one its single-item verb needs.
BULK_CAPABILITIES: dict[str, str] = {"replay": OPERATE_DLQ, "resolve": OPERATE_DLQ, "ack": RESPOND, "snooze": RESPOND}

# The capabilities each seeded group grants (``notifications.seed``; it never removes a grant).
GROUP_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "producer": (SEND,),
    "responder": (RESPOND, VIEW_CONSOLE),
    "operator": (OPERATE_DLQ, VIEW_CONSOLE),
    "policy_admin": (VIEW_CONSOLE, MANAGE_POLICIES),
    "console": (VIEW_CONSOLE,),
}
