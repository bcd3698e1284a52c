// @vitest-environment jsdom
import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { parseRoute } from "../src/router";
import { OverviewCharts } from "../src/views/Overview";
import { series } from "./series-fixture";

describe("the overview's charts", () => {
  it("summarise each chart in text and link a failure bucket to its dead letters", () => {
    render(<OverviewCharts data={series} />);
    expect(screen.getByTestId("chart-failures-summary").textContent).toContain("2 dead-lettered");
    expect(screen.getByTestId("chart-throughput-summary").textContent).toMatch(/^last hour: 6 accepted, peak 5 at \d\d:\d\d, /);
    expect(screen.getByTestId("chart-latency-summary").textContent).toMatch(/^last hour: p95 between 500 ms and 2\.0 s; /);
    expect(screen.getByTestId("chart-backlog-summary").textContent).toBe(
      "Now 2 dead letters (0 at the start) and 1 pending acknowledgements (0 at the start).");
    const failures = screen.getByTestId("chart-failures");
    const links = within(failures).getAllByRole("link", { name: "Dead letters of this bucket" });
    expect(links).toHaveLength(1); // only the bucket with dead letters links
    expect(parseRoute(links[0].getAttribute("href") ?? "")).toEqual(
      { name: "dlq", filters: { failed_since: "1700000060", failed_until: "1700000120" } });
    // The latency table shows seconds, "—" for a bucket without deliveries.
    const latency = within(screen.getByTestId("chart-latency")).getAllByRole("row");
    expect(within(latency[3]).getAllByRole("cell").map((c) => c.textContent)).toEqual(["—", "—", "—"]);
    expect(within(latency[1]).getAllByRole("cell")[0].textContent).toBe("500 ms");
  });

  it("write one 24-hour clock, the day with hour buckets, and a single p95 once", () => {
    const day = { ...series, window: "7d" as const, step_seconds: 3600, latency: { ...series.latency, p95: [1.4, 1.4, null] } };
    render(<OverviewCharts data={day} />);
    expect(screen.getByTestId("chart-throughput-summary").textContent).toMatch(/peak 5 at [A-Z][a-z]{2} \d{1,2}, \d\d:\d\d, /);
    expect(screen.getByTestId("chart-latency-summary").textContent).toMatch(/^last 7 days: p95 1\.4 s; /);
    expect(screen.getByTestId("chart-throughput-summary").textContent).not.toMatch(/AM|PM/i);
  });

  it("each chart's plot has an accessible name and its table a caption", () => {
    render(<OverviewCharts data={series} />);
    for (const name of ["Notifications", "Failures", "Delivery latency (from acceptance)", "DLQ depth and pending acknowledgements"]) {
      expect(screen.getByRole("img", { name: new RegExp(`^${name.replace(/[()]/g, "\\$&")}: `) })).toBeTruthy();
    }
    expect(screen.getAllByText("Show as table")).toHaveLength(4);
  });
});
