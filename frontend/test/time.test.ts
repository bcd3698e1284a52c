import { describe, expect, it } from "vitest";
import { formatDuration, formatLocal, formatRelative, isoUtc } from "../src/time";

describe("time", () => {
  it("keeps the raw UTC value", () => {
    expect(isoUtc(1_800_000_000)).toBe("2027-01-15T08:00:00.000Z");
  });

  it("formats in the given zone", () => {
    const tokyo = formatLocal(1_800_000_000, "Asia/Tokyo");
    const utc = formatLocal(1_800_000_000, "UTC");
    expect(tokyo).toMatch(/17/);
    expect(utc).toMatch(/08/);
    expect(tokyo).not.toEqual(utc);
  });

  it("formats durations and relative times", () => {
    expect(formatDuration(45)).toBe("45s");
    expect(formatDuration(725)).toBe("12m 5s");
    expect(formatDuration(3 * 3600 + 20 * 60)).toBe("3h 20m");
    expect(formatDuration(2 * 86400 + 4 * 3600)).toBe("2d 4h");
    expect(formatRelative(1000, 700)).toBe("in 5m 0s");
    expect(formatRelative(700, 830)).toBe("2m 10s ago");
  });
});
