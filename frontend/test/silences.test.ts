import { describe, expect, it } from "vitest";
import { matchersFrom } from "../src/components/SilenceForm";
import { parseRoute, href } from "../src/router";
import { matcherText } from "../src/views/Silences";

describe("silences", () => {
  it("starts 'Silence similar…' from the notification's own fields", () => {
    expect(matchersFrom({ source: "db-01", severity: "critical", dedup_key: "disk:/var" })).toEqual([
      { name: "source", op: "=", value: "db-01" },
      { name: "severity", op: "=", value: "critical" },
      { name: "dedup_key", op: "=", value: "disk:/var" },
    ]);
    expect(matchersFrom({ source: "db-01", severity: null, dedup_key: null })).toEqual([
      { name: "source", op: "=", value: "db-01" },
    ]);
  });

  it("routes #/silences and writes matchers as Alertmanager does", () => {
    expect(parseRoute("#/silences")).toEqual({ name: "silences" });
    expect(href({ name: "silences" })).toBe("#/silences");
    expect(matcherText({ name: "source", op: "=~", value: "db-.*" })).toBe('source=~"db-.*"');
  });
});
