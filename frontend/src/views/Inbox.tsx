import { useMemo, useState, type FormEvent } from "react";
import { query } from "../api";
import { StatusBadge } from "../components/Badge";
import { BulkActions } from "../components/BulkActions";
import { LiveIndicator } from "../components/LiveIndicator";
import { ApprovalLine, type ApprovalInfo } from "../components/ApprovalRequest";
import { NotificationActions, type ActionResult } from "../components/NotificationActions";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useDebounced, useLive, useReadModel } from "../hooks";
import { href } from "../router";
import { formatRelative } from "../time";
import type { InboxItem, Page } from "../types";

export function Inbox() {
  const { me } = useConsole();
  const [filters, setFilters] = useState({ q: "", source: "" });
  const [draft, setDraft] = useState({ q: "", source: "" });
  const { data, error, reload } = useReadModel<Page<InboxItem>>(`/ui/inbox${query({ ...filters, limit: 100 })}`);
  const titles = useMemo(() => new Map((data?.items ?? []).map((i) => [i.id, i.title])), [data]);
  const [flash, setFlash] = useState<string | null>(null);
  const refresh = useDebounced(() => void reload(), 300);
  const live = useLive({ stream: "all", limit: 0 }, refresh, refresh);
  const now = data?.now ?? Date.now() / 1000;

  function done(result: ActionResult) {
    const state = result.ack_status ? ` Acknowledgement status is now ${result.ack_status}.` : "";
    setFlash(`${result.label}: “${result.title}”.${state}`);
    void reload();
  }

  return (
    <>
      <div className="view-head">
        <h1>Inbox</h1>
        <LiveIndicator state={live} />
      </div>
      <p className="muted">Delivered notifications waiting for a response, oldest deadline first.</p>
      <form className="filters" role="search" aria-label="Filter the inbox"
        onSubmit={(e: FormEvent) => { e.preventDefault(); setFilters({ ...draft }); }}>
        <label htmlFor="inbox-q">Title or source contains</label>
        <input id="inbox-q" value={draft.q} onChange={(e) => setDraft({ ...draft, q: e.target.value })} />
        <label htmlFor="inbox-source">Source is</label>
        <input id="inbox-source" value={draft.source} onChange={(e) => setDraft({ ...draft, source: e.target.value })} />
        <button type="submit">Filter</button>
      </form>
      {me.capabilities.respond ? (
        <BulkActions actions={["ack", "snooze"]} filter={filters} titles={titles} onFinished={() => void reload()} />
      ) : null}
      {flash ? <p className="flash" role="status" data-testid="flash">{flash}</p> : null}
      <ProblemMessage explanation={error} />
      {data && data.items.length === 0 ? <p className="empty">Nothing is waiting for a response.</p> : null}
      {data && data.items.length ? (
        <ul className="rows" aria-label="Pending acknowledgements">
          {data.items.map((item) => (
            <li key={item.id} className={`row ${item.overdue ? "overdue" : ""}`} data-notification-id={item.id}>
              <div className="row-main">
                <a href={href({ name: "notification", id: item.id })} className="title">{item.title}</a>
                <span className="meta">
                  <StatusBadge value={item.severity} /> {item.source} · delivered <Time epoch={item.delivered_at} />
                </span>
                <ApprovalLine approval={(item as { approval?: ApprovalInfo | null }).approval} />
                <span className={`deadline ${item.overdue ? "late" : ""}`}>
                  Deadline <Time epoch={item.deadline} /> ({formatRelative(item.deadline, now)})
                </span>
              </div>
              <NotificationActions target={{ ...item, dead_letter: false }} onDone={done} onRefused={refresh} />
            </li>
          ))}
        </ul>
      ) : null}
      {data?.next ? <p className="muted">More are waiting: these are the {data.items.length} with the oldest deadlines.</p> : null}
    </>
  );
}
