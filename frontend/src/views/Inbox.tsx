import { useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { actions } from "../actions";
import { StatusBadge } from "../components/Badge";
import { BulkActions } from "../components/BulkActions";
import { KeyboardHelp } from "../components/KeyboardHelp";
import { INBOX_FILTERS } from "../generated/limits";
import { LiveIndicator } from "../components/LiveIndicator";
import { ApprovalLine, type ApprovalInfo } from "../components/ApprovalRequest";
import { NotificationActions, type ActionResult } from "../components/NotificationActions";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useLiveRefresh, useNow, usePagedList } from "../hooks";
import type { TimelineEvent } from "../live";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import { formatRelative } from "../time";
import { useSelection } from "../selection";
import { useTitle, useTriage } from "../triage";
import type { InboxItem, Page } from "../types";
import { GroupBar, type Filters } from "./Groups";
import { useCriticalAlerts, useNotifyChoice } from "../notify";

// Events after which a row is no longer waiting for a response: taken off at once, before the
// re-read confirms.
const SETTLED = new Set(["ACKED", "DISMISSED", "TIMED_OUT", "RETENTION_APPLIED"]);
const FILTERS = INBOX_FILTERS; // the server's (selectors.LIST_FILTERS), generated
const GROUPS = ["source", "severity", "channel", "dedup_key"] as const;

export function Inbox() {
  const { api, me } = useConsole();
  const [filters, setFilters] = useState<Filters>({});
  const [draft, setDraft] = useState("");
  const list = usePagedList<InboxItem, Page<InboxItem>>("/ui/inbox", filters);
  const titles = useMemo(() => new Map(list.items.map((i) => [i.id, i.title])), [list.items]);
  const [flash, setFlash] = useState<string | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const { live, lagging, flush } = useLiveRefresh({ stream: "all", limit: 0 }, list.refresh, {
    onEvent: (ev: TimelineEvent) => {
      if (ev.notification_id && SETTLED.has(ev.kind)) list.remove(ev.notification_id);
    },
  });
  const now = useNow(1000);
  const total = list.page?.total ?? list.items.length;
  useTitle(`(${total}) Inbox · UNS`);
  const [notify, setNotify] = useNotifyChoice();
  useCriticalAlerts(list.items, list.loaded, notify);

  const rows = useRef<HTMLUListElement>(null);
  const ids = useMemo(() => list.items.map((i) => i.id), [list.items]);
  const respond = me.capabilities.respond;
  // Approvals are decided one at a time (the server skips them in a bulk action): not selectable.
  const selectable = useMemo(() => list.items.filter((i) => !i.approval).map((i) => i.id), [list.items]);
  const selection = useSelection(selectable);
  const triage = useTriage(ids, rows, {
    a: respond ? () => {
      const item = list.items.find((i) => i.id === triage.current);
      if (!item) return;
      if (item.approval) {
        // An approval is decided, never acknowledged by a key (the server would refuse a bare ACK,
        // approval_not_explicit): the row's Approve button takes the focus, and the row says why.
        setFlash(`“${item.title}” is an approval: decide it with Approve or Deny.`);
        const row = Array.from(rows.current?.querySelectorAll<HTMLLIElement>("li[data-notification-id]") ?? [])
          .find((li) => li.dataset.notificationId === item.id);
        row?.querySelector<HTMLButtonElement>('button[data-action="approve"]')?.focus();
        return;
      }
      void ack(item);
    } : undefined,
    x: respond ? () => triage.current && selectable.includes(triage.current) && selection.toggle(triage.current) : undefined,
  });

  async function ack(item: InboxItem) {
    setProblem(null);
    try {
      const body = await actions.ack(api, item.id);
      list.remove(item.id);
      done({ label: "Acknowledged", title: item.title, ack_status: body.ack_status });
    } catch (err) {
      setProblem(explainError(err));
      flush();
    }
  }

  function done(result: ActionResult) {
    const state = result.ack_status ? ` Acknowledgement status is now ${result.ack_status}.` : "";
    setFlash(`${result.label}: “${result.title}”.${state}`);
    flush();
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    setFilters((f) => ({ ...f, q: draft || undefined }));
  }

  useEffect(() => setDraft(filters.q ?? ""), [filters.q]);

  return (
    <>
      <div className="view-head">
        <h1>Inbox</h1>
        <LiveIndicator state={live} lagging={lagging} refreshedAt={list.refreshedAt} />
      </div>
      <p className="muted">Delivered notifications waiting for a response, oldest deadline first.
        {" "}<button type="button" className="link" onClick={() => triage.setHelp(true)}>Keyboard: press ?</button></p>
      <KeyboardHelp open={triage.help} onClose={() => triage.setHelp(false)} />
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the inbox">
        <label htmlFor="inbox-q">Title or source contains</label>
        <input id="inbox-q" value={draft} onChange={(e) => setDraft(e.target.value)} />
        <button type="submit">Filter</button>
        <label className="check">
          <input type="checkbox" checked={notify}
            onChange={(e) => void setNotify(e.target.checked).then((refused) => refused && setFlash(refused))} />
          {" "}Browser notification for new critical items (while this page is open)
        </label>
      </form>
      <GroupBar path="/ui/inbox/groups" groups={GROUPS} filterNames={FILTERS} filters={filters} onChange={setFilters} />
      {flash ? <p className="flash" role="status" data-testid="flash">{flash}</p> : null}
      <ProblemMessage explanation={problem ?? list.error} onDismiss={problem ? () => setProblem(null) : undefined} />
      {list.loaded ? (
        <p className="count" data-testid="inbox-count" role="status">
          Showing {list.items.length} of {total}{list.page?.total_capped ? "+" : ""} waiting
          {selection.ids.length ? ` · ${selection.ids.length} selected` : ""}.
        </p>
      ) : null}
      {respond && selectable.length ? (
        <label className="check">
          <input type="checkbox" checked={selection.all} onChange={() => selection.setAll(!selection.all)} /> Select all shown
        </label>
      ) : null}
      {respond ? (
        // Kept mounted when the list empties (as a bulk ACK empties it), so its results stay.
        <BulkActions actions={["ack", "snooze"]} filter={filters} selected={selection.ids} titles={titles}
          allShownSelected={selection.all} onClear={selection.clear}
          onFinished={(_, results) => {
            selection.replace(results.filter((r) => r.result !== "settled").map((r) => r.notification_id));
            flush();
          }} />
      ) : null}
      {list.loaded && list.items.length === 0 ? <p className="empty">Nothing is waiting for a response.</p> : null}
      {list.items.length ? (
        <ul className="rows" aria-label="Pending acknowledgements" ref={rows}>
          {list.items.map((item, index) => (
            <li key={item.id} className={`row ${item.overdue ? "overdue" : ""} ${triage.cursor === index ? "current" : ""}`}
              data-notification-id={item.id} data-row-index={index} tabIndex={-1}
              aria-current={triage.cursor === index ? "true" : undefined} onFocus={() => triage.onRowFocus(index)}>
              {respond ? (
                item.approval ? <span className="select-spacer" aria-hidden="true" /> : (
                  <input type="checkbox" className="select" checked={selection.has(item.id)}
                    onChange={() => selection.toggle(item.id)} aria-label={`Select ${item.title}`} />
                )
              ) : null}
              <div className="row-main">
                <a href={href({ name: "notification", id: item.id })} className="title">{item.title}</a>
                <span className="meta">
                  <StatusBadge value={item.severity} /> {item.source} · delivered <Time epoch={item.delivered_at} />
                </span>
                <ApprovalLine approval={item.approval as ApprovalInfo | null | undefined} requester={item.principal} />
                <span className={`deadline ${item.deadline <= now ? "late" : ""}`} data-testid="deadline">
                  Deadline <Time epoch={item.deadline} /> ({formatRelative(item.deadline, now)})
                </span>
              </div>
              <NotificationActions target={{ ...item, dead_letter: false, asApproval: item.approval ? "buttons" : undefined }} onDone={(r) => { list.remove(item.id); triage.keepFocus(); done(r); }}
                onRefused={flush} />
            </li>
          ))}
        </ul>
      ) : null}
      {list.next ? (
        <button type="button" className="secondary" disabled={list.loadingMore} onClick={() => void list.loadMore()}>
          Load more ({total - list.items.length} more)
        </button>
      ) : null}
    </>
  );
}
