// @vitest-environment jsdom
// The Silences view: ending a silence asks first (an active one says how many it has held; a
// pending window is "Cancel"), a refused comment names its field, and times read in the browser's zone.
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { Api } from "../src/api";
import { ConsoleProvider } from "../src/context";
import { MAX_SILENCE_COMMENT_LENGTH } from "../src/generated/limits";
import { formatLocal } from "../src/time";
import { Silences } from "../src/views/Silences";
import { calls, me, problem, respond } from "./fetchmock";

const silence = (id: string, state: "active" | "pending", held: number, value: string) => ({
  id, state, held, matchers: [{ name: "source", op: "=", value }], starts_at: 1.7e9, starts_at_iso: "", ends_at: 1.8e9,
  ends_at_iso: "", comment: `why ${id}`, created_by: "olga", created_at: 1.7e9, created_at_iso: "", expired_by: null,
  updated_at: 1.7e9, updated_at_iso: "",
});
const model = { now: 1.75e9, now_iso: "", active: [silence("s1", "active", 3, "db")], pending: [silence("s2", "pending", 0, "web")], expired: [] };

function mount(routes: Record<string, unknown>) {
  const fetchMock = respond({ "GET /ui/silences": model, "POST /api/v1/silences/preview": { matched: 0, scanned: 0, complete: true, sample: [] }, ...routes });
  render(<ConsoleProvider api={new Api(fetchMock)} me={me({ operate_dlq: true })}><Silences /></ConsoleProvider>);
  return fetchMock;
}

describe("Silences", () => {
  it("expires an active silence only after a confirmation that says how many it has held", async () => {
    const fetchMock = mount({ "POST /api/v1/silences/s1/expire": { id: "s1" } });
    const row = await screen.findByTestId("silence-s1");
    expect(screen.getByText(/still accepted \(All lists them\)/)).toBeTruthy();
    await userEvent.click(within(row).getByRole("button", { name: "Expire now" }));
    const ask = screen.getByRole("alertdialog", { name: 'Expire the silence source="db" now?' });
    expect(ask.textContent).toContain("It has held 3 notifications. Whatever it still holds is released now");
    await userEvent.click(within(ask).getByRole("button", { name: "Keep it" }));
    expect(screen.queryByRole("alertdialog")).toBeNull();
    expect(calls(fetchMock, "POST /api/v1/silences/s1/expire")).toHaveLength(0);

    await userEvent.click(within(row).getByRole("button", { name: "Expire now" }));
    await userEvent.click(within(screen.getByRole("alertdialog")).getByRole("button", { name: "Expire now" }));
    expect((await screen.findByText(/^Silence expired/)).textContent).toBe('Silence expired: source="db".');
    expect(calls(fetchMock, "POST /api/v1/silences/s1/expire")).toHaveLength(1);
  });

  it("calls ending a window that has not started 'Cancel', and asks first", async () => {
    const fetchMock = mount({ "POST /api/v1/silences/s2/expire": { id: "s2" } });
    const row = await screen.findByTestId("silence-s2");
    expect(within(row).queryByRole("button", { name: "Expire now" })).toBeNull();
    await userEvent.click(within(row).getByRole("button", { name: "Cancel" }));
    const ask = screen.getByRole("alertdialog", { name: 'Cancel the maintenance window source="web"?' });
    expect(ask.textContent).toContain("It has not started: it will never hold anything.");
    expect(calls(fetchMock, "POST /api/v1/silences/s2/expire")).toHaveLength(0);
    await userEvent.click(within(ask).getByRole("button", { name: "Cancel the window" }));
    await screen.findByText('Maintenance window cancelled: source="web".');
    expect(calls(fetchMock, "POST /api/v1/silences/s2/expire")).toHaveLength(1);
  });

  it("bounds the comment, names the field the server refused, and says until when in local time", async () => {
    let refused = false;
    mount({
      "POST /api/v1/silences": () => {
        if (!refused) {
          refused = true;
          return problem(400, { code: "invalid_request", detail: "the request is invalid",
            errors: [{ field: "comment", message: "must be at most 2000 characters" }] });
        }
        return silence("s3", "active", 0, "db");
      },
    });
    await userEvent.click(await screen.findByRole("button", { name: "New silence" }));
    const comment = screen.getByLabelText("Comment") as HTMLInputElement;
    expect(comment.maxLength).toBe(MAX_SILENCE_COMMENT_LENGTH);
    await userEvent.type(screen.getByLabelText("Matcher 1 value"), "db");
    await userEvent.type(comment, "migration");
    await userEvent.click(screen.getByRole("button", { name: "Create silence" }));
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("The request was not accepted.");
    expect(within(alert).getByRole("listitem").textContent).toBe("comment: must be at most 2000 characters");

    await userEvent.click(screen.getByRole("button", { name: "Create silence" }));
    await waitFor(() => expect(screen.getByText(/^Silence created until/).textContent)
      .toBe(`Silence created until ${formatLocal(1.8e9)}.`));
  });
});
