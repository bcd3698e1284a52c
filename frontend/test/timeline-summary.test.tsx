import { describe, expect, it } from "vitest";
import { summarise } from "../src/views/NotificationDetail";

type Entry = Parameters<typeof summarise>[0];
const entry = (kind: string, payload: Record<string, unknown>) => ({ kind, payload } as unknown as Entry);

describe("timeline summaries of a page to people", () => {
  it("say who a schedule paged, and through what", () => {
    const text = summarise(entry("ONCALL_RESOLVED", { target: "schedule:db-primary", people: [
      { user: "bob", source: "override", contact_methods: [{ id: "c1", kind: "webhook" }] }] }));
    expect(text).toBe("schedule:db-primary paged bob (override, 1 contact method)");
    expect(summarise(entry("CHANNEL_ATTEMPT_RESULT", { channel: "schedule:db-primary", success: true,
      metadata: { user: "bob", kind: "webhook" } }))).toBe("schedule:db-primary (bob by webhook): succeeded");
  });

  it("say when nobody was paged, and why", () => {
    expect(summarise(entry("ONCALL_RESOLVED", { target: "schedule:nights", people: [], reason: "nobody is on call" })))
      .toBe("schedule:nights paged nobody: nobody is on call");
  });
});
