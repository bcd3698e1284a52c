import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eventFromMessage, LiveTimeline, socketUrl, type LiveState } from "../src/live";

class FakeSocket {
  static last: FakeSocket | null = null;
  sent: string[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: MessageEvent) => void) | null = null;
  onclose: ((e: CloseEvent) => void) | null = null;
  closed = false;
  constructor(public url: string) {
    FakeSocket.last = this;
  }
  send(data: string) {
    this.sent.push(data);
  }
  close() {
    this.closed = true;
  }
  emit(data: unknown) {
    this.onmessage?.({ data: JSON.stringify(data) } as MessageEvent);
  }
  drop(code = 1006) {
    this.onclose?.({ code } as CloseEvent);
  }
}

const loc = { protocol: "https:", host: "uns.example:8443" };

describe("live timeline", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("builds the socket URL: the session cookie by default, a token query parameter for machine clients", () => {
    expect(socketUrl(loc)).toBe("wss://uns.example:8443/ws/timeline/");
    expect(socketUrl(loc, "a b")).toBe("wss://uns.example:8443/ws/timeline/?token=a%20b");
    expect(socketUrl({ protocol: "http:", host: "h" }, "t")).toBe("ws://h/ws/timeline/?token=t");
  });

  it("reads nested and flat event messages", () => {
    expect(eventFromMessage({ type: "event", event: { id: "1", kind: "ACKED", at: 5, payload: {}, notification_id: "n" } }))
      .toMatchObject({ id: "1", kind: "ACKED", notification_id: "n" });
    expect(eventFromMessage({ type: "event", id: "2", kind: "ACCEPTED", at: 1, payload: {} })).toMatchObject({ id: "2" });
    expect(eventFromMessage({ type: "subscribed" })).toBeNull();
    expect(eventFromMessage("nope")).toBeNull();
  });

  it("subscribes, syncs on connect, streams events and catches up after a reconnect", () => {
    const states: LiveState[] = [];
    const events: string[] = [];
    let syncs = 0;
    const live = new LiveTimeline("tok", { notification_id: "n1" }, {
      onEvent: (e) => events.push(e.kind),
      onSync: () => { syncs += 1; },
      onState: (s) => states.push(s),
    }, { factory: (url) => new FakeSocket(url) as unknown as WebSocket, location: loc });
    live.start();
    const first = FakeSocket.last!;
    first.onopen!();
    expect(JSON.parse(first.sent[0])).toEqual({ action: "subscribe", notification_id: "n1" });
    expect(syncs).toBe(1);
    first.emit({ type: "event", event: { id: "e1", kind: "DELIVERY_RESULT", at: 1, payload: { status: "DELIVERED" } } });
    expect(events).toEqual(["DELIVERY_RESULT"]);
    first.drop();
    expect(states.at(-1)).toBe("reconnecting");
    vi.advanceTimersByTime(10_000);
    const second = FakeSocket.last!;
    expect(second).not.toBe(first);
    second.onopen!();
    expect(syncs).toBe(2); // re-read the read model: nothing missed while disconnected
    expect(states.at(-1)).toBe("live");
    live.stop();
    expect(second.closed).toBe(true);
  });

  it("falls back to polling when the socket is refused", () => {
    const states: LiveState[] = [];
    let syncs = 0;
    const live = new LiveTimeline("tok", { stream: "all" }, {
      onEvent: () => undefined,
      onSync: () => { syncs += 1; },
      onState: (s) => states.push(s),
    }, { factory: (url) => new FakeSocket(url) as unknown as WebSocket, location: loc, pollMs: 1000 });
    live.start();
    FakeSocket.last!.drop(4401);
    expect(states.at(-1)).toBe("polling");
    expect(syncs).toBe(1);
    vi.advanceTimersByTime(3000);
    expect(syncs).toBe(4);
    live.stop();
    vi.advanceTimersByTime(3000);
    expect(syncs).toBe(4);
  });
});
