import { useEffect, useState, type FormEvent } from "react";
import { DeliveryState, StatusBadge } from "../components/Badge";
import { LiveIndicator } from "../components/LiveIndicator";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useLiveRefresh, usePagedList } from "../hooks";
import { href } from "../router";
import { useTitle } from "../triage";
import { toEpoch, toLocal } from "../time";
import type { NotificationListItem, Page } from "../types";
import { readFilters, TIME_FILTER, type FilterRules } from "../filters";

// The listing API's own values (GET /api/v1/notifications); the server refuses anything else.
const STATUSES = ["", "PENDING", "DELIVERED", "FAILED", "DEDUPLICATED"];
const ACK_STATUSES = ["", "PENDING", "ACKED", "DISMISSED", "TIMED_OUT", "NONE"];
// ``dead_letter`` has no control of its own: the Overview's "FAILED, resolved or best effort" links with it.
const FIELDS = ["status", "ack_status", "source", "dead_letter", "since", "until"] as const;

/** What each filter accepts (a name not here takes any text); the address is hand-editable. */
const VALID: FilterRules = {
  status: { ok: (v) => STATUSES.includes(v), what: "not a status" },
  ack_status: { ok: (v) => ACK_STATUSES.includes(v), what: "not an acknowledgement status" },
  dead_letter: { ok: (v) => v === "true" || v === "false", what: "not true or false" },
  since: TIME_FILTER,
  until: TIME_FILTER,
};

/** Every notification, filtered by status, ack status, source and acceptance time (the filters
 *  live in the address, so the Overview's counts link here), newest first, paged to the end. */
export function AllNotifications({ filters }: { filters: Record<string, string> }) {
  const { active, dropped } = readFilters(FIELDS, VALID, filters);
  const list = usePagedList<NotificationListItem, Page<NotificationListItem>>("/ui/notifications", active);
  const { live, lagging } = useLiveRefresh({ stream: "all", limit: 0 }, list.refresh);
  const [draft, setDraft] = useState(active);
  useEffect(() => setDraft(active), [JSON.stringify(active)]); // eslint-disable-line react-hooks/exhaustive-deps
  const total = list.page?.total ?? list.items.length;
  useTitle(`(${total}) Notifications · UNS`);

  function submit(e: FormEvent) {
    e.preventDefault();
    const chosen = Object.fromEntries(Object.entries(draft).filter(([, v]) => v));
    window.location.hash = href({ name: "notifications", filters: chosen });
  }

  const set = (name: string, value: string) => setDraft((d) => ({ ...d, [name]: value }));
  return (
    <>
      <div className="view-head">
        <h1>All notifications</h1>
        <LiveIndicator state={live} lagging={lagging} refreshedAt={list.refreshedAt} />
      </div>
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the notifications">
        <label htmlFor="all-status">Status</label>
        <select id="all-status" value={draft.status ?? ""} onChange={(e) => set("status", e.target.value)}>
          {STATUSES.map((s) => <option key={s} value={s}>{s || "any"}</option>)}
        </select>
        <label htmlFor="all-ack">Acknowledgement</label>
        <select id="all-ack" value={draft.ack_status ?? ""} onChange={(e) => set("ack_status", e.target.value)}>
          {ACK_STATUSES.map((s) => <option key={s} value={s}>{s || "any"}</option>)}
        </select>
        <label htmlFor="all-source">Source is</label>
        <input id="all-source" value={draft.source ?? ""} onChange={(e) => set("source", e.target.value)} />
        <label htmlFor="all-since">Accepted from</label>
        <input id="all-since" type="datetime-local" value={toLocal(draft.since)} onChange={(e) => set("since", toEpoch(e.target.value))} />
        <label htmlFor="all-until">until</label>
        <input id="all-until" type="datetime-local" value={toLocal(draft.until)} onChange={(e) => set("until", toEpoch(e.target.value))} />
        <button type="submit">Filter</button>
        {Object.keys(active).length || dropped.length ? <a href={href({ name: "notifications" })}>Clear filters</a> : null}
      </form>
      {dropped.length ? (
        <p className="filter-note" role="status" data-testid="all-dropped">Not applied, from the address: {dropped.join(", ")}.</p>
      ) : null}
      <ProblemMessage explanation={list.error} />
      {list.loaded ? (
        <p className="count" data-testid="all-count" role="status">Showing {list.items.length} of {total}{list.page?.total_capped ? "+" : ""} notifications.</p>
      ) : null}
      {list.loaded && list.items.length === 0 ? <p className="empty">No notifications match.</p> : null}
      {list.items.length ? (
        <div className="table-wrap">
          <table className="all-notifications">
            <thead>
              <tr><th scope="col">Title</th><th scope="col">Source</th><th scope="col">Severity</th><th scope="col">Status</th><th scope="col">Ack</th><th scope="col">Accepted</th></tr>
            </thead>
            <tbody>
              {list.items.map((n) => (
                <tr key={n.id} data-notification-id={n.id}>
                  <td className="title"><a href={href({ name: "notification", id: n.id })}>{n.title}</a></td>
                  <td className="source">{n.source}</td>
                  <td><StatusBadge value={n.severity} /></td>
                  <td><DeliveryState status={n.status} deadLetter={n.dead_letter} resolved={n.resolved} withheld={n.withheld} /></td>
                  <td>{n.ack_status ? <StatusBadge value={n.ack_status} /> : "—"}</td>
                  <td className="nowrap"><Time epoch={n.accepted_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {list.next ? (
        <button type="button" className="secondary" disabled={list.loadingMore} onClick={() => void list.loadMore()}>
          Load more ({total - list.items.length} more)
        </button>
      ) : null}
    </>
  );
}
