import { describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import { runBulk } from "../src/bulk";

describe("runBulk", () => {
  it("reports every item, in order, with refusals in plain words", async () => {
    const results = await runBulk(["a", "b", "c"], async (id) => {
      if (id === "b") throw new ApiError({ status: 409, code: "replay_blocked", detail: "blocked by x" });
      return {};
    }, "Replay requested", 2);
    expect(results.map((r) => [r.id, r.ok])).toEqual([["a", true], ["b", false], ["c", true]]);
    expect(results[0].message).toBe("Replay requested");
    expect(results[1].message).toMatch(/Replay is blocked/);
    expect(results[1].message).toContain("blocked by x");
  });
});
