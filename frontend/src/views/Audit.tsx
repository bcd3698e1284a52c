import { useEffect, useState, type FormEvent } from "react";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { usePagedList } from "../hooks";
import { href } from "../router";
import { formatDuration, toEpoch, toLocal } from "../time";
import { useTitle } from "../triage";
import type { AuditItem, Page } from "../types";
import { readFilters, TIME_FILTER, type FilterRules } from "../filters";

type Action = AuditItem["action"];
type ObjectType = AuditItem["object_type"];

// GET /ui/audit's filters (notifications.selectors.parse_audit_query); they live in the address
// (#/audit?actor=...), so a row's actor, object or bulk action links to its own filtered list.
const FIELDS = ["actor", "action", "object_type", "object_id", "bulk_action_id", "since", "until"] as const;
/** What each filter accepts; the address is hand-editable (``filters.readFilters``). */
const RULES: FilterRules = {
  action: { ok: (v) => v in ACTIONS, what: "not an action" },
  object_type: { ok: (v) => v in OBJECT_TYPES, what: "not an object type" },
  since: TIME_FILTER,
  until: TIME_FILTER,
};

/** Each action in words, by the object it acts on (the server's ``people_audit.ACTIONS``). */
export const ACTIONS: Record<Action, string> = {
  ACKED: "acknowledged",
  DISMISSED: "dismissed",
  SNOOZED: "snoozed",
  ESCALATED: "escalated",
  REPLAY_REQUESTED: "replayed",
  FAILURE_RESOLVED: "resolved",
  APPROVED: "approved",
  DENIED: "denied",
  BULK_ACTION_CREATED: "started a bulk action",
  CHANNEL_CREATED: "created channel",
  CHANNEL_UPDATED: "changed channel",
  CHANNEL_SECRET_ROTATED: "rotated the secret of channel",
  CHANNEL_ENABLED: "enabled channel",
  CHANNEL_DISABLED: "disabled channel",
  CHANNEL_DELETED: "deleted channel",
  CHANNEL_TESTED: "tested channel",
  POLICY_CREATED: "created policy",
  POLICY_EDITED: "edited policy",
  POLICY_CLONED: "cloned to policy",
  POLICY_ACTIVATED: "activated policy",
  POLICY_RETIRED: "retired policy",
  LOGIN_REFUSED: "was refused a login (throttled)",
  SILENCE_CREATED: "created silence",
  SILENCE_UPDATED: "changed silence",
  SILENCE_EXPIRED: "expired silence",
  TEAM_CREATED: "created team",
  TEAM_UPDATED: "changed team",
  TEAM_DELETED: "deleted team",
  SCHEDULE_CREATED: "created schedule",
  SCHEDULE_UPDATED: "changed schedule",
  SCHEDULE_DELETED: "deleted schedule",
  SCHEDULE_LAYER_ADDED: "added a layer to schedule",
  SCHEDULE_LAYER_UPDATED: "changed a layer of schedule",
  SCHEDULE_LAYER_DELETED: "removed a layer of schedule",
  SCHEDULE_OVERRIDE_ADDED: "added an override to schedule",
  SCHEDULE_OVERRIDE_DELETED: "removed an override of schedule",
  SCHEDULE_IMPORTED: "imported shifts into schedule",
  SCHEDULE_FEED_TOKEN_ROTATED: "rotated the calendar feed token of schedule",
  CONTACT_METHOD_CREATED: "added contact method",
  CONTACT_METHOD_UPDATED: "changed contact method",
  CONTACT_METHOD_DELETED: "removed contact method",
  CONTACT_METHOD_VERIFIED: "test-sent to contact method",
};

const OBJECT_TYPES: Record<ObjectType, string> = {
  notification: "Notification",
  decision: "Approval",
  bulk_action: "Bulk action",
  channel: "Channel",
  policy: "Policy",
  login: "Login",
  silence: "Silence",
  team: "Team",
  schedule: "Schedule",
  contact_method: "Contact method",
};

const num = (v: unknown) => (typeof v === "number" ? v : null);

/** The few words of an action's ``detail`` worth a glance (never the whole document). */
export function note(item: AuditItem): string {
  const d = item.detail ?? {};
  switch (item.action) {
    case "SNOOZED": {
      const s = num(d.seconds);
      return s === null ? "" : `for ${formatDuration(s)}`;
    }
    case "ESCALATED":
      return [num(d.level) !== null ? `level ${d.level}` : "", typeof d.reason === "string" && d.reason ? `“${d.reason}”` : ""]
        .filter(Boolean).join(", ");
    case "REPLAY_REQUESTED":
      return num(d.cycle) !== null ? `cycle ${d.cycle}` : "";
    case "CHANNEL_UPDATED":
      return Array.isArray(d.changed) ? `changed ${d.changed.join(", ")}` : "";
    case "CHANNEL_TESTED":
    case "CONTACT_METHOD_VERIFIED":
      return d.success === true ? "test delivered" : d.success === false ? "test failed" : "";
    case "POLICY_ACTIVATED":
      return num(d.revision) !== null ? `revision ${d.revision}` : "";
    case "APPROVED":
    case "DENIED":
      return typeof d.risk === "string" ? `risk ${d.risk}` : "";
    case "LOGIN_REFUSED":
      return typeof d.address === "string" ? `from ${d.address}` : "";
    default:
      return "";
  }
}

/** Where a row's object lives in the console (null: nowhere to go). */
export function objectLink(item: AuditItem): string | null {
  switch (item.object_type) {
    case "notification":
      return href({ name: "notification", id: item.object_id });
    case "decision":
      return typeof item.detail?.notification_id === "string"
        ? href({ name: "notification", id: item.detail.notification_id }) : null;
    case "channel":
      return href({ name: "channels" });
    case "policy":
      return href({ name: "policies" });
    case "bulk_action":
      return href({ name: "audit", filters: { bulk_action_id: item.object_id } });
    case "silence":
      return href({ name: "silences" });
    case "schedule":
      return href({ name: "oncall-schedule", schedule: item.object_id });
    case "team":
      return href({ name: "oncall" });
    default:
      return null;
  }
}

function Row({ item }: { item: AuditItem }) {
  const link = objectLink(item);
  const title = item.object_title || item.object_id;
  const extra = note(item);
  const bulk = item.bulk_action_id && item.action !== "BULK_ACTION_CREATED" ? item.bulk_action_id : null;
  return (
    <tr data-testid="audit-row" data-action={item.action}>
      <td className="nowrap"><Time epoch={item.at} /></td>
      <td><a href={href({ name: "audit", filters: { actor: item.actor } })} title={`Only what ${item.actor} did`}>
        <strong>{item.actor}</strong></a></td>
      <td>{ACTIONS[item.action] ?? item.action}{extra ? <span className="muted"> · {extra}</span> : null}
        {bulk ? <> <a className="muted" href={href({ name: "audit", filters: { bulk_action_id: bulk } })}>(bulk action)</a></> : null}</td>
      <td>
        <span className="muted">{OBJECT_TYPES[item.object_type] ?? item.object_type}</span>{" "}
        {link ? <a href={link}>{title}</a> : <span>{title}</span>}{" "}
        <a className="muted" href={href({ name: "audit", filters: { object_type: item.object_type, object_id: item.object_id } })}
          title={`Everything done to this ${(OBJECT_TYPES[item.object_type] ?? "object").toLowerCase()}`}
          aria-label={`History of ${title}`}>history</a>
      </td>
    </tr>
  );
}

/** Who did what, when, to what: people's actions newest first (replay, resolve, bulk actions,
 *  responses, approvals, channel and policy changes, refused logins), filtered by actor, action,
 *  object and time. Delivery attempts are not here: they are on each notification's timeline. */
export function Audit({ filters = {} }: { filters?: Record<string, string> }) {
  const { active, dropped } = readFilters(FIELDS, RULES, filters);
  const list = usePagedList<AuditItem, Page<AuditItem>>("/ui/audit", active, 50);
  const [draft, setDraft] = useState<Record<string, string>>(active);
  useEffect(() => setDraft(active), [JSON.stringify(active)]); // eslint-disable-line react-hooks/exhaustive-deps
  useTitle("Audit · UNS");

  function submit(e: FormEvent) {
    e.preventDefault();
    const chosen = Object.fromEntries(Object.entries(draft).filter(([, v]) => v));
    if (!chosen.object_type) delete chosen.object_id;
    window.location.hash = href({ name: "audit", filters: chosen });
  }
  const set = (name: string, value: string) => setDraft((d) => ({ ...d, [name]: value }));
  const filtered = Object.keys(active).length > 0;

  return (
    <>
      <div className="view-head"><h1>Audit</h1></div>
      <p className="muted">Who did what, when, to what, newest first. Delivery attempts are on each notification's timeline.</p>
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the audit">
        <label htmlFor="audit-actor">Who</label>
        <input id="audit-actor" value={draft.actor ?? ""} onChange={(e) => set("actor", e.target.value)} size={14} />
        <label htmlFor="audit-action">Did</label>
        <select id="audit-action" value={draft.action ?? ""} onChange={(e) => set("action", e.target.value)}>
          <option value="">anything</option>
          {(Object.keys(ACTIONS) as Action[]).map((a) => <option key={a} value={a}>{ACTIONS[a]}</option>)}
        </select>
        <label htmlFor="audit-type">To</label>
        <select id="audit-type" value={draft.object_type ?? ""} onChange={(e) => set("object_type", e.target.value)}>
          <option value="">anything</option>
          {(Object.keys(OBJECT_TYPES) as ObjectType[]).map((t) => <option key={t} value={t}>{OBJECT_TYPES[t]}</option>)}
        </select>
        <label htmlFor="audit-object">id or name</label>
        <input id="audit-object" value={draft.object_id ?? ""} onChange={(e) => set("object_id", e.target.value)} size={14}
          disabled={!draft.object_type} />
        <label htmlFor="audit-since">From</label>
        <input id="audit-since" type="datetime-local" value={toLocal(draft.since)} onChange={(e) => set("since", toEpoch(e.target.value))} />
        <label htmlFor="audit-until">until</label>
        <input id="audit-until" type="datetime-local" value={toLocal(draft.until)} onChange={(e) => set("until", toEpoch(e.target.value))} />
        <button type="submit">Filter</button>
        {filtered || dropped.length ? <a href={href({ name: "audit" })}>Clear</a> : null}
      </form>
      {dropped.length ? (
        <p className="filter-note" role="status" data-testid="audit-dropped">Not applied, from the address: {dropped.join(", ")}.</p>
      ) : null}
      {active.bulk_action_id ? <p>Showing one bulk action and the actions on its items.</p> : null}
      <ProblemMessage explanation={list.error} />
      {list.items.length ? (
        <div className="table-wrap">
          <table className="compact" data-testid="audit-table">
            <caption className="visually-hidden">People's actions, newest first</caption>
            <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Did</th><th scope="col">To</th></tr></thead>
            <tbody>{list.items.map((item) => <Row key={item.id} item={item} />)}</tbody>
          </table>
        </div>
      ) : null}
      {list.loaded && list.items.length === 0 ? <p className="empty">{filtered ? "No action matches." : "No actions yet."}</p> : null}
      {list.next ? (
        <button type="button" className="secondary" disabled={list.loadingMore} onClick={() => void list.loadMore()}>Load more</button>
      ) : null}
    </>
  );
}
