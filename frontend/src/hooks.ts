import { useCallback, useEffect, useRef, useState } from "react";
import { useConsole } from "./context";
import { query } from "./api";
import { LiveTimeline, RefreshScheduler, type LiveState, type RefreshOptions, type Subscription, type TimelineEvent } from "./live";
import type { Page } from "./types";
import { explainError, type Explanation } from "./problems";

/** GET a /ui read model; ``reload`` re-reads it (keeping the old data on screen meanwhile). */
export function useReadModel<T>(path: string | null) {
  const { api } = useConsole();
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Explanation | null>(null);
  const [loading, setLoading] = useState(false);
  const seq = useRef(0);

  const reload = useCallback(async () => {
    if (!path) return;
    const mine = ++seq.current;
    setLoading(true);
    try {
      const body = await api.get<T>(path);
      if (mine === seq.current) {
        setData(body);
        setError(null);
      }
    } catch (err) {
      if (mine === seq.current) setError(explainError(err));
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, [api, path]);

  useEffect(() => {
    setData(null);
    void reload();
  }, [reload]);

  return { data, error, loading, reload, setData };
}

/** Follow /ws/timeline/; ``onSync`` runs on every (re)connect and, when the socket is not
 *  usable, on every poll. Returns the connection state for the live indicator. */
export function useLive(subscription: Subscription | null, onEvent: (ev: TimelineEvent) => void, onSync: () => void): LiveState {
  const { api } = useConsole();
  const [state, setState] = useState<LiveState>("connecting");
  const handlers = useRef({ onEvent, onSync });
  handlers.current = { onEvent, onSync };
  const key = subscription ? JSON.stringify(subscription) : null;

  useEffect(() => {
    if (!key || !api.authenticated) return;
    const live = new LiveTimeline(null, JSON.parse(key) as Subscription, {
      onEvent: (ev) => handlers.current.onEvent(ev),
      onSync: () => handlers.current.onSync(),
      onState: setState,
    });
    live.start();
    return () => live.stop();
  }, [api, key]);
  return state;
}

/** How the list views re-read under a stream: at most 300 ms after the last event, at most
 *  1 s after the first one not yet on screen; "lagging" after 3 s without catching up. */
export const LIVE_REFRESH: RefreshOptions = { waitMs: 300, maxWaitMs: 1000, lagMs: 3000 };
/** And every 1.5 s whatever the socket says, while the page is visible: a server that pushes its
 *  events late (a busy process, a full layer) cannot leave the view stale for longer. */
export const SAFETY_REFRESH_MS = 1500;

/** A ``RefreshScheduler`` around ``run`` (the latest one is always called): ``request`` after an
 *  event, ``flush`` after the user's own action or a (re)connect; ``lagging`` for the indicator. */
export function useRefresh(run: () => Promise<unknown>, options: RefreshOptions = LIVE_REFRESH,
  periodMs: number | null = SAFETY_REFRESH_MS) {
  const latest = useRef(run);
  latest.current = run;
  const [lagging, setLagging] = useState(false);
  const [scheduler, setScheduler] = useState<RefreshScheduler | null>(null);
  // Made in the effect (not in state's initialiser) so a remount (StrictMode) gets a live one.
  useEffect(() => {
    const s = new RefreshScheduler(() => latest.current(), options, setLagging);
    setScheduler(s);
    const timer = periodMs ? setInterval(() => {
      if (typeof document === "undefined" || !document.hidden) s.request();
    }, periodMs) : null;
    return () => {
      if (timer) clearInterval(timer);
      s.stop();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [periodMs]);
  const ref = useRef<RefreshScheduler | null>(null);
  ref.current = scheduler;
  const request = useCallback(() => ref.current?.request(), []);
  const flush = useCallback(() => ref.current?.flush(), []);
  return { request, flush, lagging };
}

/** A paged /ui list, the one way every list view pages (``{"items", "next", "total"?}``).
 *
 *  ``loadMore`` follows ``next`` to the end, appending; ``refresh`` re-reads from the start as many
 *  rows as are loaded (in pages of at most 500, the server's limit), so rows, selection and scroll
 *  position survive a live update; ``patch``/``remove`` change rows in place from an event before
 *  the re-read confirms. ``refresh`` rejects when the read fails (the scheduler reports lag). */
export function usePagedList<T extends { id: string }, P extends Page<T> = Page<T>>(
  path: string,
  params: Record<string, string | number | null | undefined>,
  pageSize = 100,
) {
  const { api } = useConsole();
  const [items, setItems] = useState<T[]>([]);
  const [page, setPage] = useState<P | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<Explanation | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  const [refreshedAt, setRefreshedAt] = useState<number | null>(null);
  const key = path + query(params);
  const state = useRef({ key, count: 0, next: null as string | null, seq: 0 });
  // Rows taken off by remove(): a re-read that started before the removal must not bring them back.
  const removed = useRef(new Map<string, number>());

  const fetchFrom = useCallback(async (want: number): Promise<{ items: T[]; last: P }> => {
    const out: T[] = [];
    let cursor: string | null = null;
    let last: P;
    do {
      const limit = Math.min(500, Math.max(pageSize, want - out.length));
      last = await api.get<P>(path + query({ ...params, limit, cursor }));
      out.push(...last.items);
      cursor = last.next;
    } while (cursor && out.length < want);
    return { items: out, last };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, key, pageSize]);

  // ``rows`` mirrors ``items`` for the merges below (computed outside React's updaters).
  const rowsRef = useRef<T[]>([]);
  const show = (rows: T[]) => {
    rowsRef.current = rows;
    state.current.count = rows.length;
    setItems(rows);
  };

  const refresh = useCallback(async () => {
    const mine = ++state.current.seq;
    const myKey = key;
    const started = Date.now();
    const want = Math.max(pageSize, state.current.count);
    try {
      const { items: fetched, last } = await fetchFrom(want);
      if (mine !== state.current.seq || state.current.key !== myKey) return;
      for (const [id, at] of removed.current) if (at < started - 60_000) removed.current.delete(id);
      const fresh = fetched.filter((i) => !((removed.current.get(i.id) ?? -Infinity) >= started));
      let rows = fresh;
      let nextCursor = last.next;
      if (state.current.count > want && last.next) {
        // "Load more" finished while this re-read ran: keep the rows it added after the re-read's.
        const seen = new Set(fresh.map((i) => i.id));
        rows = [...fresh, ...rowsRef.current.slice(fetched.length).filter((i) => !seen.has(i.id))];
        nextCursor = state.current.next;
      }
      state.current.next = nextCursor;
      show(rows);
      setPage(last);
      setNext(nextCursor);
      setError(null);
      setLoaded(true);
      setRefreshedAt(Date.now() / 1000);
    } catch (err) {
      if (mine === state.current.seq) setError(explainError(err));
      throw err;
    }
  }, [fetchFrom, key, pageSize]);

  const loadMore = useCallback(async () => {
    const cursor = state.current.next;
    if (!cursor) return;
    const myKey = key;
    setLoadingMore(true);
    try {
      const more = await api.get<P>(path + query({ ...params, limit: pageSize, cursor }));
      // Only another list (new filters) discards it; a re-read meanwhile does not (it keeps these rows).
      if (state.current.key !== myKey) return;
      const seen = new Set(rowsRef.current.map((i) => i.id));
      show([...rowsRef.current, ...more.items.filter((i) => !seen.has(i.id) && !removed.current.has(i.id))]);
      state.current.next = more.next;
      setPage(more);
      setNext(more.next);
      setError(null);
    } catch (err) {
      if (state.current.key === myKey) setError(explainError(err));
    } finally {
      setLoadingMore(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, key, pageSize]);

  useEffect(() => {
    state.current = { key, count: 0, next: null, seq: state.current.seq + 1 };
    rowsRef.current = [];
    setItems([]);
    setPage(null);
    setNext(null);
    setLoaded(false);
    refresh().catch(() => undefined);
  }, [key, refresh]);

  const remove = useCallback((id: string) => {
    removed.current.set(id, Date.now());
    if (rowsRef.current.some((i) => i.id === id)) show(rowsRef.current.filter((i) => i.id !== id));
  }, []);
  const patch = useCallback((id: string, change: (item: T) => T) => {
    show(rowsRef.current.map((i) => (i.id === id ? change(i) : i)));
  }, []);

  return { items, page, next, error, loaded, loadingMore, refreshedAt, refresh, loadMore, remove, patch };
}

/** Re-render every ``ms`` (ticking ages and countdowns); returns the current epoch seconds. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now() / 1000), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** Collapse bursts of calls into one, ``ms`` after the last. */
export function useDebounced(fn: () => void, ms: number): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => () => {
    if (timer.current) clearTimeout(timer.current);
  }, []);
  return useCallback(() => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), ms);
  }, [ms]);
}
