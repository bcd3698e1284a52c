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
