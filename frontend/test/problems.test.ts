import { describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import { explainError, explainProblem } from "../src/problems";

describe("explainProblem", () => {
  it("names who won an ACK conflict", () => {
    const e = explainProblem({ status: 409, code: "ack_conflict", detail: "already ACKED by another actor or response", ack_status: "ACKED" });
    expect(e.headline).toBe("Someone else already responded: the notification is ACKED.");
    expect(e.detail).toBe("already ACKED by another actor or response");
  });

  it("explains a blocked replay with its successor", () => {
    const e = explainProblem({ status: 409, code: "replay_blocked", detail: "replay is blocked", successor_id: "abc", successor_status: "PENDING" });
    expect(e.headline).toMatch(/Replay is blocked/);
    expect(e.detail).toBe("replay is blocked Successor: abc (PENDING).");
  });

  it("says plainly that a 403 is not allowed, keeping the server's detail", () => {
    const e = explainProblem({ status: 403, code: "permission_denied", detail: "your principal lacks the capability this action needs" });
    expect(e.headline).toBe("You are not allowed to do this.");
    expect(e.detail).toContain("lacks the capability");
  });

  it("falls back on the status, then on a generic server failure", () => {
    expect(explainProblem({ status: 404 }).headline).toMatch(/does not exist/);
    expect(explainProblem({ status: 502 }).headline).toMatch(/server failed/);
  });

  it("lists the server's field errors, whatever their shape, and drops a detail that repeats one", () => {
    const e = explainProblem({ status: 400, code: "invalid_request", detail: "the request is invalid",
      errors: [{ field: "comment", message: "must be at most 2000 characters" }, { field: "", message: "must be an object" }] });
    expect(e.headline).toBe("The request was not accepted.");
    expect(e.fields).toEqual(["comment: must be at most 2000 characters", "must be an object"]);
    expect(explainProblem({ status: 400, errors: { comment: ["Too long.", "Required."], non_field_errors: ["No."] } }).fields)
      .toEqual(["comment: Too long. Required.", "No."]);
    expect(explainProblem({ status: 400, errors: [{ loc: ["body", "end"], msg: "bad" }] }).fields).toEqual(["body.end: bad"]);
    const once = explainProblem({ status: 400, detail: "end: must be after start", errors: [{ field: "end", message: "must be after start" }] });
    expect([once.detail, once.fields]).toEqual([null, ["end: must be after start"]]);
    expect(explainProblem({ status: 404 }).fields).toEqual([]);
  });

  it("handles non-API errors", () => {
    expect(explainError(new ApiError({ status: 0, code: "network_error" })).headline).toMatch(/could not be reached/);
    expect(explainError(new Error("boom")).detail).toContain("boom");
  });
});
