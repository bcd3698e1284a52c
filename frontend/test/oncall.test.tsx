// @vitest-environment jsdom
// The on-call views (issue 22): the board, a schedule's calendar with overrides (operators add and
// delete them; a refusal shows its problem and fields), and my pages with a test send.
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { ReactNode } from "react";
import { describe, expect, it } from "vitest";
import { Api } from "../src/api";
import { ConsoleProvider } from "../src/context";
import { parseRoute, href } from "../src/router";
import type { Me, MyOncall, OncallBoard, OncallCalendar, Shift } from "../src/types";
import { MyPages } from "../src/views/MyPages";
import { OnCall } from "../src/views/OnCall";
import { fromLocalInput, localInput, localMidnights, OnCallCalendar, span } from "../src/views/OnCallCalendar";
import { calls, me, problem, respond } from "./fetchmock";

/** Rendering tests on a loaded shared machine: generous, never a timing assertion. */
const SLOW = 30_000;

function mount(fetchMock: ReturnType<typeof respond>, caps: Partial<Me["capabilities"]>, view: ReactNode) {
  return render(<ConsoleProvider api={new Api(fetchMock)} me={me(caps)}>{view}</ConsoleProvider>);
}

const shift = (user: string, start: number, end: number, source: "layer" | "override" = "layer"): Shift => ({
  user, start, end, start_iso: "", end_iso: "", source, layer: source === "layer" ? "primary" : null,
  override: source === "override" ? "o1" : null,
});

const NOW = Date.now() / 1000;

const board: OncallBoard = {
  now: NOW, now_iso: "",
  schedules: [{
    name: "db", description: "", time_zone: "Europe/Berlin", team: "database", at: NOW, at_iso: "",
    on_call: { user: "ann", source: "layer", layer: "primary", override: null },
    current_shift: shift("ann", NOW - 3600, NOW + 3600), next_shift: shift("ben", NOW + 3600, NOW + 90000), updated_at: 1,
  }, {
    name: "empty", description: "", time_zone: "UTC", team: null, at: NOW, at_iso: "",
    on_call: { user: null, source: null, layer: null, override: null }, current_shift: null, next_shift: null, updated_at: 1,
  }],
  teams: [{ name: "database", description: "", members: ["ann", "ben"], schedules: ["db"] }],
};

function calendar(overridden: boolean): OncallCalendar {
  const [a] = localMidnights(new Date(), 14);
  const layer = [shift("ann", a - 3600, a + 86400), shift("ben", a + 86400, a + 14 * 86400)];
  const final = overridden
    ? [shift("ann", a - 3600, NOW - 60), shift("cy", NOW - 60, NOW + 3600, "override"), shift("ann", NOW + 3600, a + 86400),
       shift("ben", a + 86400, a + 14 * 86400)]
    : layer;
  return {
    schedule: "db", time_zone: "Europe/Berlin", team: "database", start: a, start_iso: "", end: a + 14 * 86400, end_iso: "",
    layers: [{ position: 0, name: "primary", members: ["ann", "ben"], rotation_unit: "days", rotation_count: 1,
      start: "2020-01-01T09:00", time_zone: "Europe/Berlin", restrictions: [], end: null, shifts: layer }],
    shifts: final,
    overrides: overridden ? [{ id: "o1", user: "cy", start: NOW - 60, start_iso: "", end: NOW + 3600, end_iso: "",
      source: "manual", created_by: "olga", created_at: NOW }] : [],
  };
}

describe("routes", () => {
  it("parses and builds the on-call routes", () => {
    expect(parseRoute("#/oncall")).toEqual({ name: "oncall" });
    expect(parseRoute("#/oncall/db%20primary")).toEqual({ name: "oncall-schedule", schedule: "db primary" });
    expect(parseRoute("#/my-pages")).toEqual({ name: "my-pages" });
    expect(href({ name: "oncall-schedule", schedule: "db primary" })).toBe("#/oncall/db%20primary");
  });
});

describe("calendar helpers", () => {
  it("clips a shift to a day in words", () => {
    expect(span({ start: 0, end: 100 }, 10, 20)).toBe("all day");
    expect(span({ start: 0, end: 15 }, 10, 20)).toMatch(/^00:00–\d\d:\d\d$/);
    expect(span({ start: 15, end: 30 }, 10, 20)).toMatch(/^\d\d:\d\d–24:00$/);
  });
  it("gives 15 local midnights a day apart (a DST day may be 23 or 25 hours)", () => {
    const days = localMidnights(new Date(2026, 2, 20, 15), 14);
    expect(days).toHaveLength(15);
    for (const d of days) expect(new Date(d * 1000).getHours()).toBe(0);
  });
  it("round-trips a datetime-local value; empty is NaN (the server refuses it)", () => {
    const t = Math.floor(NOW / 60) * 60;
    expect(fromLocalInput(localInput(t))).toBe(t);
    expect(fromLocalInput("")).toBeNaN();
  });
});

describe("OnCall", () => {
  it("shows who is on call now and next, with the hand-off in both zones, and the teams", async () => {
    const fetchMock = respond({ "GET /ui/oncall": board });
    mount(fetchMock, {}, <OnCall />);
    const now = await screen.findByTestId("now-db");
    expect(now.textContent).toBe("ann (layer primary)");
    expect(screen.getByTestId("next-db").textContent).toBe("ben (layer primary)");
    expect(within(screen.getByTestId("oncall-db")).getByText(/Europe\/Berlin:/)).toBeTruthy();
    expect(within(screen.getByTestId("oncall-db")).getByRole("link", { name: "db" }).getAttribute("href")).toBe("#/oncall/db");
    expect(screen.getByTestId("now-empty").textContent).toBe("nobody on call");
    expect(screen.getByTestId("team-database").textContent).toContain("ann, ben");
  }, SLOW);
});

describe("OnCallCalendar", () => {
  it("lists 14 days of layer and final shifts; a viewer gets no override controls", async () => {
    const fetchMock = respond({ "GET /ui/oncall/schedules/db/calendar": calendar(false) });
    mount(fetchMock, {}, <OnCallCalendar schedule="db" />);
    await screen.findByTestId("day-13");
    const [read] = calls(fetchMock, "GET /ui/oncall/schedules/db/calendar");
    const q = new URL(read.url, "http://x").searchParams;
    expect(Number(q.get("end")) - Number(q.get("start"))).toBeGreaterThanOrEqual(14 * 86400 - 3600);
    expect(within(screen.getByTestId("day-0")).getAllByText("ann")).toHaveLength(2); // the layer and the final
    expect(within(screen.getByTestId("day-5")).getAllByText("ben")).toHaveLength(2);
    expect(screen.getByTestId("calendar-now").textContent).toContain("ann");
    expect(screen.queryByRole("button", { name: "Add override" })).toBeNull();
  }, SLOW);

  it("an operator adds an override; the calendar re-reads and marks it", async () => {
    let made = false;
    const fetchMock = respond({
      "GET /ui/oncall/schedules/db/calendar": () => calendar(made),
      "POST /api/v1/oncall/schedules/db/overrides": (_url: string, init?: RequestInit) => {
        made = true;
        const body = JSON.parse(String(init?.body));
        return { id: "o1", user: body.user, start: body.start, end: body.end, start_iso: "", end_iso: "", source: "manual",
          created_by: "u", created_at: NOW };
      },
    });
    mount(fetchMock, { operate_dlq: true }, <OnCallCalendar schedule="db" />);
    await screen.findByTestId("day-13");
    await userEvent.type(screen.getByLabelText("Person"), "cy");
    await userEvent.click(screen.getByRole("button", { name: "Add override" }));
    await screen.findByText(/Override added: cy/);
    const [post] = calls(fetchMock, "POST /api/v1/oncall/schedules/db/overrides");
    const body = post.body as { user: string; start: number; end: number };
    expect(body.user).toBe("cy");
    expect(body.end - body.start).toBe(3600);
    await waitFor(() => expect(screen.getByTestId("calendar-now").textContent).toContain("cy"));
    const final = within(screen.getByTestId("day-0")).getByText("cy").closest("li") as HTMLElement;
    expect(final.textContent).toContain("override");
    expect(screen.getByTestId("override-cy")).toBeTruthy();
  }, SLOW);

  it("shows the problem and its fields when an override is refused", async () => {
    const fetchMock = respond({
      "GET /ui/oncall/schedules/db/calendar": calendar(false),
      "POST /api/v1/oncall/schedules/db/overrides": problem(400, {
        code: "invalid_oncall", detail: "end: must be after start", errors: [{ field: "end", message: "must be after start" }],
      }),
    });
    mount(fetchMock, { operate_dlq: true }, <OnCallCalendar schedule="db" />);
    await screen.findByTestId("day-13");
    await userEvent.type(screen.getByLabelText("Person"), "cy");
    await userEvent.click(screen.getByRole("button", { name: "Add override" }));
    const alert = await screen.findByRole("alert");
    // the field error once, as a list item, not also as the detail that repeats it
    expect(within(alert).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["end: must be after start"]);
    expect(alert.textContent!.split("end: must be after start")).toHaveLength(2);
  }, SLOW);

  it("an operator deletes an override after confirming", async () => {
    let gone = false;
    const fetchMock = respond({
      "GET /ui/oncall/schedules/db/calendar": () => calendar(!gone),
      "DELETE /api/v1/oncall/schedules/db/overrides/o1": () => { gone = true; return new Response(null, { status: 204 }); },
    });
    mount(fetchMock, { operate_dlq: true }, <OnCallCalendar schedule="db" />);
    await userEvent.click(await screen.findByRole("button", { name: "Delete the override of cy" }));
    expect(calls(fetchMock, "DELETE /api/v1/oncall/schedules/db/overrides/o1")).toHaveLength(0);
    await userEvent.click(screen.getByRole("button", { name: "Delete override" }));
    await screen.findByText("Override deleted.");
    await waitFor(() => expect(screen.queryByTestId("override-cy")).toBeNull());
  }, SLOW);
});

describe("MyPages", () => {
  const mine = (verification: "UNVERIFIED" | "VERIFIED"): MyOncall => ({
    user: "ann",
    contact_methods: [{ id: "m1", user: "ann", position: 0, label: "pager", kind: "webhook", config: {}, has_secret: false,
      delivers_to: "https://hooks.example/***", verification, verified_at: null, last_test_at: null, last_test_error: "" }],
    pages: [{ notification_id: "n1", target: "schedule:db", at: NOW, at_iso: "", title: "replica lag", severity: "critical",
      status: "DELIVERED" }],
  });

  it("lists my pages and verifies a contact method with a test send", async () => {
    let verified = false;
    const fetchMock = respond({
      "GET /ui/oncall/me": () => mine(verified ? "VERIFIED" : "UNVERIFIED"),
      "POST /api/v1/oncall/me/contact-methods/m1/verify": () => {
        verified = true;
        return { success: true, answer: "HTTP 200", error: null, contact_method: mine("VERIFIED").contact_methods[0] };
      },
    });
    mount(fetchMock, {}, <MyPages />);
    const page = await screen.findByTestId("page-n1");
    expect(within(page).getByRole("link", { name: "replica lag" }).getAttribute("href")).toBe("#/notifications/n1");
    expect(page.textContent).toContain("schedule:db");
    expect(screen.getByTestId("method-m1").textContent).toContain("not verified");
    await userEvent.click(screen.getByRole("button", { name: "Send test through pager" }));
    await screen.findByText(/succeeded: it is verified/);
    await waitFor(() => expect(screen.getByTestId("method-m1").textContent).not.toContain("not verified"));
  }, SLOW);
});
