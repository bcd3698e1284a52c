// @vitest-environment jsdom
// A bad value in the address must not blank the console: <Time> reads "—" for an epoch that is
// not one, and a view that still fails shows a message and a way back, until the route changes.
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
import { Time } from "../src/components/Time";
import { ViewBoundary } from "../src/components/ViewBoundary";
import { ConsoleProvider } from "../src/context";
import { Dlq } from "../src/views/Dlq";
import { me, respond } from "./fetchmock";

function Boom({ fail }: { fail: boolean }) {
  if (fail) throw new RangeError("Invalid time value");
  return <p>the view</p>;
}

describe("a garbage time", () => {
  it("reads — in <Time> instead of throwing", () => {
    render(<><Time epoch={Number("garbage")} /><Time epoch={1e20} /></>);
    expect(screen.getAllByText("—")).toHaveLength(2);
  });

  it("#/dlq?failed_since=garbage still shows the DLQ, its range reading —", async () => {
    const fetchMock = respond({ "GET /ui/dlq": { items: [], next: null, now: 1, total: 0 }, "GET /ui/dlq/groups": { groups: [] } });
    render(<ConsoleProvider api={new Api(fetchMock)} me={me({})}><Dlq initial={{ failed_since: "garbage" }} /></ConsoleProvider>);
    expect((await screen.findByTestId("dlq-time-range")).textContent).toContain("Failed from —");
  });
});

describe("ViewBoundary", () => {
  it("shows what failed with a way back, and renders again when the route changes", async () => {
    const quiet = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { rerender } = render(<ViewBoundary resetKey="#/dlq?x" backHref="#/"><Boom fail /></ViewBoundary>);
    const alert = screen.getByRole("alert");
    expect(alert.textContent).toContain("This view could not be shown. Invalid time value.");
    expect(screen.getByRole("link", { name: "go to the Overview" }).getAttribute("href")).toBe("#/");

    rerender(<ViewBoundary resetKey="#/dlq?x" backHref="#/"><Boom fail={false} /></ViewBoundary>);
    expect(screen.getByRole("alert")).toBeTruthy(); // same route: still the message
    rerender(<ViewBoundary resetKey="#/dlq" backHref="#/"><Boom fail={false} /></ViewBoundary>);
    expect(screen.getByText("the view")).toBeTruthy();
    expect(screen.queryByRole("alert")).toBeNull();

    rerender(<ViewBoundary resetKey="#/dlq" backHref="#/"><Boom fail /></ViewBoundary>);
    rerender(<ViewBoundary resetKey="#/dlq" backHref="#/"><Boom fail={false} /></ViewBoundary>);
    await userEvent.click(screen.getByRole("button", { name: "try again" }));
    expect(screen.getByText("the view")).toBeTruthy();
    quiet.mockRestore();
  });
});
