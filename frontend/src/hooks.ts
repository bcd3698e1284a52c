// The console's server state, on TanStack Query: every /ui read model is a query keyed
// ``["ui", path, params?]`` (``useReadModel``: ``useQuery``; ``usePagedList``: ``useInfiniteQuery``).
// A live event invalidates ``["ui", path]`` through a ``RefreshScheduler`` (a throttle with a
// maximum wait, ``useLiveRefresh``), and the live views re-read every ``SAFETY_REFRESH_MS`` while
// the page is visible (the queries' ``refetchInterval``). A read refused with a 4xx is neither
// retried nor re-read until its key changes; a network error or 5xx is retried (``retryRead``).
import { QueryClient, useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useConsole } from "./context";
import { isRefusal, query } from "./api";
import { LiveTimeline, RefreshScheduler, type LiveState, type RefreshOptions, type Subscription, type TimelineEvent } from "./live";
import type { Page } from "./types";
import { explainError, type Explanation } from "./problems";

type Params = Record<string, string | number | null | undefined>;

/** How the list views re-read under a stream: at most 300 ms after the last event, at most
 *  1 s after the first one not yet on screen; "lagging" after 3 s without catching up. */
export const LIVE_REFRESH: RefreshOptions = { waitMs: 300, maxWaitMs: 1000, lagMs: 3000 };
/** And every 1.5 s whatever the socket says, while the page is visible: a server that pushes its
 *  events late (a busy process, a full layer) cannot leave the view stale for longer. */
export const SAFETY_REFRESH_MS = 1500;

/** The set values of ``params``, in their order (the query string and the query key). */
function setValues(params: Params): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") out[k] = v;
  return out;
}

/** A view whose last read was refused (``isRefusal``: a 4xx) neither re-reads on its interval
 *  nor on a live event: the same request would get the same answer. A new query key (its
 *  inputs changed) reads again. */
function refused(client: QueryClient, queryKey: readonly unknown[]): boolean {
  return isRefusal(client.getQueryState(queryKey)?.error);
}

function useExplained(error: unknown): Explanation | null {
  return useMemo(() => (error ? explainError(error) : null), [error]);
}

/** GET a /ui read model (``null``: nothing to read yet). ``refresh`` re-reads it, keeping the old
 *  data on screen meanwhile, and rejects when the read fails (the scheduler reports lag; the view
 *  shows ``error``); ``setData`` changes it in place before the re-read confirms. After a refusal
 *  (``refused``: a 4xx) neither ``refresh`` nor ``refetchInterval`` re-reads until ``path`` changes. */
export function useReadModel<T>(path: string | null, { refetchInterval }: { refetchInterval?: number } = {}) {
  const { api } = useConsole();
  const client = useQueryClient();
  const q = useQuery({
    queryKey: ["ui", path],
    queryFn: ({ signal }) => api.get<T>(path as string, signal),
    enabled: path !== null,
    refetchInterval: (query) => (isRefusal(query.state.error) ? false : refetchInterval ?? false),
  });
  const refresh = useCallback(
    () => (refused(client, ["ui", path]) ? Promise.resolve()
      : client.invalidateQueries({ queryKey: ["ui", path] }, { throwOnError: true })),
    [client, path],
  );
  const setData = useCallback(
    (change: (data: T) => T) => client.setQueryData<T>(["ui", path], (d) => (d === undefined ? d : change(d))),
    [client, path],
  );
  return { data: q.data ?? null, error: useExplained(q.error), refresh, setData };
}

/** A page of a /ui list as read: with when its read started (epoch ms). */
type ReadPage<P> = P & { readAt: number };

/** A paged /ui list, the one way every list view pages (``{"items", "next", "total"?}``).
 *
 *  ``loadMore`` reads the next page (``next``), appending; ``refresh`` invalidates the list, which
 *  re-reads every loaded page from the start, so rows, selection and scroll position survive a
 *  live update (it rejects when the read fails: the scheduler reports lag). The two never overlap.
 *  ``remove`` takes a row off at once, from an event or the user's own action, before the re-read
 *  confirms: a page read that started before the removal does not bring it back. The list re-reads
 *  itself every ``refetchInterval`` ms while the page is visible (``false``: never), and neither
 *  re-reads nor refreshes while its last answer is a refusal (``refused``) until its params change. */
export function usePagedList<T extends { id: string }, P extends Page<T> = Page<T>>(
  path: string,
  params: Params,
  pageSize = 100,
  { refetchInterval = SAFETY_REFRESH_MS as number | false } = {},
) {
  const { api } = useConsole();
  const client = useQueryClient();
  const filters = setValues(params);
  const key = JSON.stringify([path, filters]);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const queryKey = useMemo(() => ["ui", path, filters], [key]); // one key per path and filters
  const q = useInfiniteQuery({
    queryKey,
    queryFn: async ({ pageParam, signal }): Promise<ReadPage<P>> => {
      const readAt = Date.now();
      const page = await api.get<P>(path + query({ ...filters, limit: pageSize, cursor: pageParam }), signal);
      return { ...page, readAt };
    },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next ?? undefined,
    refetchInterval: (query) => (isRefusal(query.state.error) ? false : refetchInterval),
  });

  // Rows taken off by remove(), with when (epoch ms); forgotten after a minute.
  const removed = useRef(new Map<string, number>());
  const [removals, setRemovals] = useState(0);
  const remove = useCallback((id: string) => {
    const now = Date.now();
    for (const [old, at] of removed.current) if (at < now - 60_000) removed.current.delete(old);
    removed.current.set(id, now);
    setRemovals((n) => n + 1);
  }, []);

  const pages = q.data?.pages;
  const items = useMemo(() => {
    const out: T[] = [];
    const seen = new Set<string>();
    for (const page of pages ?? []) {
      for (const item of page.items) {
        const at = removed.current.get(item.id);
        if (seen.has(item.id) || (at !== undefined && at >= page.readAt)) continue;
        seen.add(item.id);
        out.push(item);
      }
    }
    return out;
    // `removals` says removed.current changed.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pages, removals]);

  // refresh and loadMore one after the other: a re-read must not cancel the page being loaded.
  const queue = useRef<Promise<unknown>>(Promise.resolve());
  const serial = useCallback(<R,>(task: () => Promise<R>): Promise<R> => {
    const run = queue.current.then(task, task);
    queue.current = run.catch(() => undefined);
    return run;
  }, []);
  const refresh = useCallback(
    () => serial(() => (refused(client, queryKey) ? Promise.resolve()
      : client.invalidateQueries({ queryKey: ["ui", path] }, { throwOnError: true }))),
    [client, path, queryKey, serial],
  );
  const latest = useRef({ key, fetchNextPage: q.fetchNextPage });
  latest.current = { key, fetchNextPage: q.fetchNextPage };
  const [loadingMore, setLoadingMore] = useState(false);
  const loadMore = useCallback(async () => {
    const mine = latest.current.key;
    setLoadingMore(true);
    try {
      // Only another list (new filters) meanwhile drops it; its failure shows as ``error``.
      await serial(async () => {
        if (latest.current.key === mine) await latest.current.fetchNextPage();
      });
    } finally {
      setLoadingMore(false);
    }
  }, [serial]);

  const page = pages?.length ? pages[pages.length - 1] : null;
  return {
    items,
    page,
    next: q.hasNextPage && page ? page.next : null,
    error: useExplained(q.error),
    loaded: q.data !== undefined,
    loadingMore,
    refreshedAt: q.dataUpdatedAt ? q.dataUpdatedAt / 1000 : null,
    refresh,
    loadMore,
    remove,
  };
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

/** A ``RefreshScheduler`` around ``run`` (the latest one is always called): ``request`` after an
 *  event, ``flush`` after the user's own action or a (re)connect; ``lagging`` for the indicator. */
export function useRefresh(run: () => Promise<unknown>, options: RefreshOptions = LIVE_REFRESH) {
  const latest = useRef(run);
  latest.current = run;
  const [lagging, setLagging] = useState(false);
  const scheduler = useRef<RefreshScheduler | null>(null);
  // Made in the effect (not during render) so a remount (StrictMode) gets a live one.
  useEffect(() => {
    const s = new RefreshScheduler(() => latest.current(), options, setLagging);
    scheduler.current = s;
    return () => {
      s.stop();
      if (scheduler.current === s) scheduler.current = null;
    };
    // The options of a view are constants.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const request = useCallback(() => scheduler.current?.request(), []);
  const flush = useCallback(() => scheduler.current?.flush(), []);
  return { request, flush, lagging };
}

/** A view kept current by the live stream: each event (after ``onEvent``, which may take a row
 *  off at once, or return ``false`` for an event that is not the view's) asks for a ``refresh``
 *  through the scheduler, and every (re)connect flushes one. Returns the connection state,
 *  whether the view lags, and ``request``/``flush`` for the view's own actions. */
export function useLiveRefresh(subscription: Subscription, refresh: () => Promise<unknown>,
  { onEvent, options = LIVE_REFRESH }: { onEvent?: (ev: TimelineEvent) => boolean | void; options?: RefreshOptions } = {}) {
  const { request, flush, lagging } = useRefresh(refresh, options);
  const live = useLive(subscription, (ev) => {
    if (onEvent?.(ev) !== false) request();
  }, flush);
  return { live, lagging, request, flush };
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
