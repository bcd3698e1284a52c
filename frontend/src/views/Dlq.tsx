import { useEffect, useMemo, useState, type FormEvent } from "react";
import { query } from "../api";
import { BulkActions } from "../components/BulkActions";
import { LiveIndicator } from "../components/LiveIndicator";
import { NotificationActions, type ActionResult } from "../components/NotificationActions";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useDebounced, useLive } from "../hooks";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import type { DlqItem, Page } from "../types";

export function Dlq() {
  const { api, me } = useConsole();
  const [filters, setFilters] = useState({ q: "", source: "" });
  const [draft, setDraft] = useState({ q: "", source: "" });
  const [blockedOnly, setBlockedOnly] = useState(false);
  const [items, setItems] = useState<DlqItem[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<Explanation | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [flash, setFlash] = useState<string | null>(null);

  async function load(append = false) {
    try {
      const page = await api.get<Page<DlqItem>>(`/ui/dlq${query({ ...filters, limit: 100, cursor: append ? cursor : null })}`);
      setItems((old) => (append ? [...old, ...page.items] : page.items));
      setCursor(page.next);
      setError(null);
      setLoaded(true);
      if (!append) {
        const present = new Set(page.items.map((i) => i.id));
        setSelected((s) => new Set([...s].filter((id) => present.has(id))));
      }
    } catch (err) {
      setError(explainError(err));
    }
  }
  useEffect(() => {
    void load();
  }, [filters]);
  const refresh = useDebounced(() => void load(), 400);
  const live = useLive({ stream: "all", limit: 0 }, refresh, refresh);

  const shown = useMemo(() => (blockedOnly ? items.filter((i) => i.replay_blocked) : items), [items, blockedOnly]);
  const allSelected = shown.length > 0 && shown.every((i) => selected.has(i.id));

  function toggle(id: string) {
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  }

  const titles = useMemo(() => new Map(items.map((i) => [i.id, i.title])), [items]);
  const selectedIds = shown.filter((i) => selected.has(i.id)).map((i) => i.id);

  function submit(e: FormEvent) {
    e.preventDefault();
    setFilters({ ...draft });
  }

  function done(result: ActionResult) {
    setFlash(`${result.label}: “${result.title}”.${result.status ? ` Status is now ${result.status}.` : ""}`);
    void load();
  }

  return (
    <>
      <div className="view-head">
        <h1>Dead-letter queue</h1>
        <LiveIndicator state={live} />
      </div>
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the DLQ">
        <label htmlFor="dlq-q">Title or source contains</label>
        <input id="dlq-q" value={draft.q} onChange={(e) => setDraft({ ...draft, q: e.target.value })} />
        <label htmlFor="dlq-source">Source is</label>
        <input id="dlq-source" value={draft.source} onChange={(e) => setDraft({ ...draft, source: e.target.value })} />
        <button type="submit">Filter</button>
        <label className="check">
          <input type="checkbox" checked={blockedOnly} onChange={(e) => setBlockedOnly(e.target.checked)} /> Blocked only
        </label>
      </form>
      {flash ? <p className="flash" role="status">{flash}</p> : null}
      <ProblemMessage explanation={error} />
      {me.capabilities.operate_dlq && shown.length ? (
        <label className="check">
          <input type="checkbox" checked={allSelected} aria-label="Select all shown"
            onChange={() => setSelected(allSelected ? new Set() : new Set(shown.map((i) => i.id)))} /> Select all shown
        </label>
      ) : null}
      {me.capabilities.operate_dlq ? (
        // Kept mounted when the list empties (as a bulk replay empties it), so its results stay.
        <BulkActions actions={["replay", "resolve"]} filter={filters} selected={selectedIds} titles={titles}
          allMatching={!blockedOnly}
          onFinished={(_, results) => {
            setSelected(new Set(results.filter((r) => r.result !== "settled").map((r) => r.notification_id)));
            void load();
          }} />
      ) : null}
      {loaded && shown.length === 0 ? <p className="empty">No dead-lettered notifications{filters.q || filters.source || blockedOnly ? " match" : ""}.</p> : null}
      <ul className="rows" aria-label="Dead-lettered notifications">
        {shown.map((item) => (
          <li key={item.id} className="row" data-notification-id={item.id}>
            {me.capabilities.operate_dlq ? (
              <input type="checkbox" className="select" checked={selected.has(item.id)} onChange={() => toggle(item.id)}
                aria-label={`Select ${item.title}`} />
            ) : null}
            <div className="row-main">
              <a href={href({ name: "notification", id: item.id })} className="title">{item.title}</a>
              <span className="meta">{item.source} · failed <Time epoch={item.failed_at} /> · cycle {item.cycle},
                {" "}{item.cycle_attempts}{item.max_attempts ? ` of ${item.max_attempts}` : ""} attempts ({item.attempts} in total)</span>
              <span className="reason">{item.error_message ?? "no error recorded"}</span>
              {item.replay_blocker ? <span className="blocked">Replay blocked: {item.replay_blocker.explanation}</span> : null}
            </div>
            <NotificationActions target={item} onDone={done} onRefused={refresh} />
          </li>
        ))}
      </ul>
      {cursor ? <button type="button" className="secondary" onClick={() => void load(true)}>Load more</button> : null}
    </>
  );
}
