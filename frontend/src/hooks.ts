import { useCallback, useEffect, useRef, useState } from "react";
import { useConsole } from "./context";
import { LiveTimeline, type LiveState, type Subscription, type TimelineEvent } from "./live";
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
    const token = api.bearer;
    if (!key || !token) return;
    const live = new LiveTimeline(token, JSON.parse(key) as Subscription, {
      onEvent: (ev) => handlers.current.onEvent(ev),
      onSync: () => handlers.current.onSync(),
      onState: setState,
    });
    live.start();
    return () => live.stop();
  }, [api, key]);
  return state;
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
