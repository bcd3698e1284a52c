import { describe, expect, it } from "vitest";
import { href, parseRoute } from "../src/router";

describe("router", () => {
  it("parses hash routes", () => {
    expect(parseRoute("")).toEqual({ name: "overview" });
    expect(parseRoute("#/dlq")).toEqual({ name: "dlq" });
    expect(parseRoute("#/notifications/a%2Fb")).toEqual({ name: "notification", id: "a/b" });
    expect(parseRoute("#/nonsense")).toEqual({ name: "overview" });
  });

  it("round-trips", () => {
    const route = { name: "notification" as const, id: "0190-abc" };
    expect(parseRoute(href(route))).toEqual(route);
  });
});

describe("the all-notifications route", () => {
  it("carries its filters in the address both ways", async () => {
    const { parseRoute, href } = await import("../src/router");
    expect(parseRoute("#/notifications?status=FAILED&ack_status=PENDING")).toEqual(
      { name: "notifications", filters: { status: "FAILED", ack_status: "PENDING" } });
    expect(parseRoute("#/notifications")).toEqual({ name: "notifications", filters: {} });
    expect(href({ name: "notifications", filters: { source: "db 1" } })).toBe("#/notifications?source=db+1");
    expect(parseRoute("#/notifications/abc")).toEqual({ name: "notification", id: "abc" });
  });
});

describe("the audit route", () => {
  it("carries its filters in the address both ways", () => {
    expect(parseRoute("#/audit?actor=olga&action=REPLAY_REQUESTED")).toEqual(
      { name: "audit", filters: { actor: "olga", action: "REPLAY_REQUESTED" } });
    expect(parseRoute("#/audit")).toEqual({ name: "audit", filters: {} });
    expect(href({ name: "audit", filters: { object_type: "channel", object_id: "ops hook" } }))
      .toBe("#/audit?object_type=channel&object_id=ops+hook");
    expect(href({ name: "audit" })).toBe("#/audit");
  });
});
