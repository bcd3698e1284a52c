import { useMemo, useRef, useState, type FormEvent } from "react";
import { actions } from "../actions";
import { StatusBadge } from "../components/Badge";
import { BulkActions } from "../components/BulkActions";
import { KeyboardHelp } from "../components/KeyboardHelp";
import { DLQ_FILTERS } from "../generated/limits";
import { LiveIndicator } from "../components/LiveIndicator";
import { NotificationActions, type ActionResult } from "../components/NotificationActions";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useLiveRefresh, useNow, usePagedList } from "../hooks";
import type { TimelineEvent } from "../live";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import { formatDuration } from "../time";
import { useSelection } from "../selection";
import { useTitle, useTriage } from "../triage";
import type { DlqItem, Page } from "../types";
import { GroupBar, type Filters } from "./Groups";

// Events after which a row has left the DLQ: taken off at once, before the re-read confirms.
const LEFT_DLQ = new Set(["REPLAY_REQUESTED", "FAILURE_RESOLVED", "RETENTION_APPLIED"]);
const FILTERS = DLQ_FILTERS; // the server's (selectors.LIST_FILTERS), generated
/** The route's filters the list knows (the server refuses any other name). */
function pick(initial?: Filters): Filters {
  return Object.fromEntries(Object.entries(initial ?? {}).filter(([k]) => (FILTERS as readonly string[]).includes(k)));
}

const GROUPS = ["reason", "source", "channel", "severity", "dedup_key"] as const;
const SORTS = [
  { value: "failed", label: "Oldest failure first" },
  { value: "-failed", label: "Newest failure first" },
  { value: "accepted", label: "Oldest accepted first" },
];

/** The DLQ; ``initial``: filters from the route (``#/dlq?failed_since=&failed_until=``, a chart's link). */
export function Dlq({ initial }: { initial?: Filters } = {}) {
  const { api, me } = useConsole();
  const [filters, setFilters] = useState<Filters>(() => pick(initial));
  const [sort, setSort] = useState("failed");
  const [draft, setDraft] = useState({ q: "", source: "" });
  const [blockedOnly, setBlockedOnly] = useState(false);
  const params = useMemo(() => ({ ...filters, sort }), [filters, sort]);
  const list = usePagedList<DlqItem, Page<DlqItem>>("/ui/dlq", params);
  const [flash, setFlash] = useState<string | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const { live, lagging, flush } = useLiveRefresh({ stream: "all", limit: 0 }, list.refresh, {
    onEvent: (ev: TimelineEvent) => {
      if (ev.notification_id && LEFT_DLQ.has(ev.kind)) list.remove(ev.notification_id);
    },
  });
  const now = useNow(1000);
  const total = list.page?.total ?? list.items.length;
  useTitle(`(${total}) DLQ · UNS`);

  const shown = useMemo(() => (blockedOnly ? list.items.filter((i) => i.replay_blocked) : list.items), [list.items, blockedOnly]);
  const rows = useRef<HTMLUListElement>(null);
  const ids = useMemo(() => shown.map((i) => i.id), [shown]);
  // A selection holds only rows still shown (a live update that takes a row off deselects it).
  const selection = useSelection(ids);
  const operate = me.capabilities.operate_dlq;
  const triage = useTriage(ids, rows, {
    r: operate ? () => {
      const item = shown.find((i) => i.id === triage.current);
      if (item && !item.replay_blocked) void replay(item);
    } : undefined,
    x: operate ? () => triage.current && selection.toggle(triage.current) : undefined,
  });

  const titles = useMemo(() => new Map(list.items.map((i) => [i.id, i.title])), [list.items]);

  async function replay(item: DlqItem) {
    setProblem(null);
    try {
      const body = await actions.replay(api, item.id);
      list.remove(item.id);
      done({ label: "Replay requested", title: item.title, status: body.status });
    } catch (err) {
      setProblem(explainError(err));
      flush();
    }
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    setFilters((f) => ({ ...f, q: draft.q || undefined, source: draft.source || undefined }));
  }

  function done(result: ActionResult) {
    setFlash(`${result.label}: “${result.title}”.${result.status ? ` Status is now ${result.status}.` : ""}`);
    flush();
  }

  const filtered = FILTERS.some((n) => filters[n]) || blockedOnly;
  return (
    <>
      <div className="view-head">
        <h1>Dead-letter queue</h1>
        <LiveIndicator state={live} lagging={lagging} refreshedAt={list.refreshedAt} />
      </div>
      <p className="muted"><button type="button" className="link" onClick={() => triage.setHelp(true)}>Keyboard: press ?</button></p>
      <KeyboardHelp open={triage.help} onClose={() => triage.setHelp(false)} />
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the DLQ">
        <label htmlFor="dlq-q">Title or source contains</label>
        <input id="dlq-q" value={draft.q} onChange={(e) => setDraft({ ...draft, q: e.target.value })} />
        <label htmlFor="dlq-source">Source is</label>
        <input id="dlq-source" value={draft.source} onChange={(e) => setDraft({ ...draft, source: e.target.value })} />
        <button type="submit">Filter</button>
        <label htmlFor="dlq-sort">Sort</label>
        <select id="dlq-sort" value={sort} onChange={(e) => setSort(e.target.value)}>
          {SORTS.map((s) => <option key={s.value} value={s.value}>{s.label}</option>)}
        </select>
        <label className="check">
          <input type="checkbox" checked={blockedOnly} onChange={(e) => setBlockedOnly(e.target.checked)} /> Blocked only
        </label>
      </form>
      {filters.failed_since || filters.failed_until ? (
        <p className="filter-note" data-testid="dlq-time-range">
          Failed{filters.failed_since ? <> from <Time epoch={Number(filters.failed_since)} /></> : null}
          {filters.failed_until ? <> until <Time epoch={Number(filters.failed_until)} /></> : null}.{" "}
          <button type="button" className="link"
            onClick={() => setFilters((f) => ({ ...f, failed_since: undefined, failed_until: undefined }))}>
            Show every failure time
          </button>
        </p>
      ) : null}
      <GroupBar path="/ui/dlq/groups" groups={GROUPS} filterNames={FILTERS}
        filters={filters} onChange={(f) => { setFilters(f); setDraft({ q: f.q ?? "", source: f.source ?? "" }); }} />
      {flash ? <p className="flash" role="status">{flash}</p> : null}
      <ProblemMessage explanation={problem ?? list.error} onDismiss={problem ? () => setProblem(null) : undefined} />
      {list.loaded ? (
        <p className="count" data-testid="dlq-count" role="status">
          Showing {shown.length} of {total}{list.page?.total_capped ? "+" : ""} dead letters{selection.ids.length ? ` · ${selection.ids.length} selected` : ""}.
        </p>
      ) : null}
      {operate && shown.length ? (
        <label className="check">
          <input type="checkbox" checked={selection.all} onChange={() => selection.setAll(!selection.all)} /> Select all shown
        </label>
      ) : null}
      {operate ? (
        // Kept mounted when the list empties (as a bulk replay empties it), so its results stay.
        <BulkActions actions={["replay", "resolve"]} filter={filters} selected={selection.ids} titles={titles}
          allMatching={!blockedOnly} allShownSelected={selection.all} onClear={selection.clear}
          onFinished={(_, results) => {
            selection.replace(results.filter((r) => r.result !== "settled").map((r) => r.notification_id));
            flush();
          }} />
      ) : null}
      {list.loaded && shown.length === 0 ? <p className="empty">No dead-lettered notifications{filtered ? " match" : ""}.</p> : null}
      <ul className="rows" aria-label="Dead-lettered notifications" ref={rows}>
        {shown.map((item, index) => (
          <li key={item.id} className={`row ${triage.cursor === index ? "current" : ""}`} data-notification-id={item.id}
            data-row-index={index} tabIndex={-1} aria-current={triage.cursor === index ? "true" : undefined}
            onFocus={() => triage.onRowFocus(index)}>
            {operate ? (
              <input type="checkbox" className="select" checked={selection.has(item.id)} onChange={() => selection.toggle(item.id)}
                aria-label={`Select ${item.title}`} />
            ) : null}
            <div className="row-main">
              <a href={href({ name: "notification", id: item.id })} className="title">{item.title}</a>
              <span className="meta"><StatusBadge value={item.severity} /> {item.source} · failed <Time epoch={item.failed_at} />
                {item.failed_at ? <span data-testid="age"> ({formatDuration(now - item.failed_at)} ago)</span> : null} · cycle {item.cycle},
                {" "}{item.cycle_attempts}{item.max_attempts ? ` of ${item.max_attempts}` : ""} attempts ({item.attempts} in total)</span>
              <span className="reason">{item.error_message ?? "no error recorded"}</span>
              {item.failure_hint ? <span className="hint" data-testid="failure-hint">{item.failure_hint}</span> : null}
              {item.replay_blocker ? <span className="blocked">Replay blocked: {item.replay_blocker.explanation}</span> : null}
            </div>
            <NotificationActions target={item} onDone={(r) => { list.remove(item.id); triage.keepFocus(); done(r); }}
              onRefused={flush} />
          </li>
        ))}
      </ul>
      {list.next ? (
        <button type="button" className="secondary" disabled={list.loadingMore} onClick={() => void list.loadMore()}>
          Load more ({total - list.items.length} more)
        </button>
      ) : null}
    </>
  );
}
