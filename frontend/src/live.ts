// Live timeline over /ws/timeline/ (Channels). The socket authenticates with the console's session
// cookie (the browser sends it with the same-origin handshake; the server checks Origin), subscribes to one notification or to the whole stream, and
// receives {"type": "event", ...} messages as events commit. A lost socket reconnects with
// backoff and the caller re-reads its read model on every (re)connect, so nothing is missed. When
// the socket cannot be used at all, the caller falls back to polling the read model.

export interface TimelineEvent {
  id: string;
  notification_id?: string;
  kind: string;
  at: number;
  at_iso?: string;
  payload: Record<string, unknown>;
}

export type Subscription = { notification_id: string } | { stream: "all"; limit?: number };

export type LiveState = "connecting" | "live" | "reconnecting" | "polling";

export interface LiveHandlers {
  onEvent: (event: TimelineEvent) => void;
  /** Called on every successful (re)subscription: re-read the read model to catch up. */
  onSync: () => void;
  onState: (state: LiveState) => void;
}

type SocketFactory = (url: string) => WebSocket;

/** Pull the event out of a pushed message (``{"type":"event","event":{...}}`` or flat). */
export function eventFromMessage(message: unknown): TimelineEvent | null {
  if (!message || typeof message !== "object") return null;
  const m = message as Record<string, unknown>;
  if (m.type !== "event") return null;
  const inner = (m.event && typeof m.event === "object" ? m.event : m) as Record<string, unknown>;
  if (typeof inner.kind !== "string" || typeof inner.id !== "string") return null;
  const notificationId = (inner.notification_id ?? m.notification_id) as string | undefined;
  return {
    id: inner.id,
    kind: inner.kind,
    at: Number(inner.at),
    at_iso: inner.at_iso as string | undefined,
    payload: (inner.payload as Record<string, unknown>) ?? {},
    notification_id: notificationId,
  };
}

/** The socket URL; a ``token`` is only for machine clients (the console uses its session cookie). */
export function socketUrl(location: Pick<Location, "protocol" | "host">, token?: string | null): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const base = `${scheme}//${location.host}/ws/timeline/`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

// Close codes meaning "do not retry": unauthenticated / forbidden / unknown (consumer's codes).
const FATAL_CLOSE = new Set([4401, 4403, 4404, 1008]);
const MAX_FAILURES_BEFORE_POLLING = 3;

export class LiveTimeline {
  private socket: WebSocket | null = null;
  private stopped = false;
  private failures = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pollTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly token: string | null,
    private readonly subscription: Subscription,
    private readonly handlers: LiveHandlers,
    private readonly options: { pollMs?: number; factory?: SocketFactory; location?: Pick<Location, "protocol" | "host"> } = {},
  ) {}

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close(1000);
    }
    this.socket = null;
  }

  private connect(): void {
    if (this.stopped) return;
    this.handlers.onState(this.failures ? "reconnecting" : "connecting");
    const factory = this.options.factory ?? ((url: string) => new WebSocket(url));
    let socket: WebSocket;
    try {
      socket = factory(socketUrl(this.options.location ?? window.location, this.token));
    } catch {
      this.fallBackToPolling();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      socket.send(JSON.stringify({ action: "subscribe", ...this.subscription }));
      this.handlers.onState("live");
      this.handlers.onSync();
    };
    socket.onmessage = (msg: MessageEvent) => {
      let data: unknown;
      try {
        data = JSON.parse(String(msg.data));
      } catch {
        return;
      }
      this.failures = 0; // the server talks to us: the next loss starts a fresh backoff
      if ((data as { type?: string })?.type === "subscribed") {
        this.handlers.onSync(); // the subscription is in place: catch up once more
        return;
      }
      const ev = eventFromMessage(data);
      if (ev) this.handlers.onEvent(ev);
    };
    socket.onclose = (ev: CloseEvent) => {
      this.socket = null;
      if (this.stopped) return;
      this.failures += 1;
      if (FATAL_CLOSE.has(ev.code) || this.failures >= MAX_FAILURES_BEFORE_POLLING) {
        this.fallBackToPolling();
        return;
      }
      this.handlers.onState("reconnecting");
      const delay = Math.min(10_000, 500 * 2 ** Math.min(this.failures, 5));
      this.retryTimer = setTimeout(() => this.connect(), delay);
    };
  }

  private fallBackToPolling(): void {
    if (this.stopped || this.pollTimer) return;
    this.handlers.onState("polling");
    this.handlers.onSync();
    this.pollTimer = setInterval(() => this.handlers.onSync(), this.options.pollMs ?? 2000);
  }
}

// --- refresh cadence under a stream of events ----------------------------------------------------

export interface RefreshOptions {
  /** Quiet gap after the last request before a refresh runs (coalesces bursts). */
  waitMs: number;
  /** A refresh runs at most this long after the first request not yet covered, however busy the
   *  stream is: a steady stream never starves the view (a pure debounce would). */
  maxWaitMs: number;
  /** The view is "lagging" when a request has waited this long without a refresh that covers it
   *  finishing (a slow or failing server); default 2 × maxWaitMs. */
  lagMs?: number;
  now?: () => number;
}

/** Throttle with a maximum wait for re-reading a read model while events stream in.
 *
 *  ``request()`` says "the view may be stale"; ``run`` (async, the re-read) then starts ``waitMs``
 *  after the last request but never later than ``maxWaitMs`` after the first pending one. Runs never
 *  overlap: requests made while one is in flight are served by one more run right after it. The
 *  scheduler reports ``lagging`` (``onLag``) while a request has been waiting longer than ``lagMs``
 *  for a successful run that started after it, and when it catches up again. */
export class RefreshScheduler {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lagTimer: ReturnType<typeof setTimeout> | null = null;
  private pendingSince: number | null = null; // first request not covered by a started run
  private lastRequest = 0;
  private waitingSince: number | null = null; // first request not covered by a finished run
  private running = false;
  private stopped = false;
  private lagging = false;
  private readonly now: () => number;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly options: RefreshOptions,
    private readonly onLag: (lagging: boolean) => void = () => undefined,
  ) {
    this.now = options.now ?? (() => Date.now());
  }

  request(): void {
    if (this.stopped) return;
    const t = this.now();
    this.lastRequest = t;
    if (this.pendingSince === null) this.pendingSince = t;
    if (this.waitingSince === null) {
      this.waitingSince = t;
      this.armLag();
    }
    if (!this.running) this.schedule();
  }

  /** Run now (a user's action or a (re)connect), still never overlapping a run in flight. */
  flush(): void {
    if (this.stopped) return;
    if (this.pendingSince === null) this.pendingSince = this.now();
    if (this.waitingSince === null) {
      this.waitingSince = this.pendingSince;
      this.armLag();
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.running) void this.fire();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.lagTimer) clearTimeout(this.lagTimer);
    this.timer = this.lagTimer = null;
  }

  get isLagging(): boolean {
    return this.lagging;
  }

  private schedule(): void {
    if (this.pendingSince === null) return;
    const due = Math.min(this.lastRequest + this.options.waitMs, this.pendingSince + this.options.maxWaitMs);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.fire(), Math.max(0, due - this.now()));
  }

  private async fire(): Promise<void> {
    this.timer = null;
    if (this.stopped || this.running || this.pendingSince === null) return;
    this.pendingSince = null;
    this.running = true;
    let ok = false;
    try {
      await this.run();
      ok = true;
    } catch {
      ok = false;
    } finally {
      this.running = false;
    }
    if (this.stopped) return;
    if (ok) {
      // Everything requested before this run started is on screen now.
      this.waitingSince = this.pendingSince;
      if (this.waitingSince === null) {
        if (this.lagTimer) clearTimeout(this.lagTimer);
        this.lagTimer = null;
        this.setLagging(false);
      } else {
        this.armLag();
      }
    } else if (this.pendingSince === null) {
      // Try again as if requested now: waitMs from now, not at once (a failing server answering
      // fast would otherwise be asked again in a tight loop).
      this.pendingSince = this.lastRequest = this.now();
    }
    if (this.pendingSince !== null) this.schedule();
  }

  private armLag(): void {
    if (this.lagTimer) clearTimeout(this.lagTimer);
    if (this.waitingSince === null) return;
    const lagMs = this.options.lagMs ?? 2 * this.options.maxWaitMs;
    const left = this.waitingSince + lagMs - this.now();
    if (left <= 0) {
      this.setLagging(true);
      return;
    }
    this.lagTimer = setTimeout(() => {
      this.lagTimer = null;
      if (this.waitingSince !== null) this.setLagging(true);
    }, left);
  }

  private setLagging(value: boolean): void {
    if (value === this.lagging) return;
    this.lagging = value;
    this.onLag(value);
  }
}
