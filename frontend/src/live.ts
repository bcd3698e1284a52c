// Live timeline over /ws/timeline/ (Channels). The socket authenticates with the in-memory token
// as a `token` query parameter, subscribes to one notification or to the whole stream, and
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

export function socketUrl(location: Pick<Location, "protocol" | "host">, token: string): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws/timeline/?token=${encodeURIComponent(token)}`;
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
    private readonly token: string,
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
