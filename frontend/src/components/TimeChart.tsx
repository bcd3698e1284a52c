// A time-series chart of /ui/series buckets on uPlot (docs/decisions/charts.md: small, fast
// canvas charts), with its text alternatives: a one-line summary (the plot's accessible name) and
// a "Show as table" disclosure holding every bucket's values. Colours are Okabe-Ito's
// colour-blind-safe palette (``PALETTE``), and the series also differ by dash and by name in the
// legend, so colour is never the only cue. A click on a bucket calls ``onBucket(index)``; the
// table's rows carry the same link for keyboard and screen-reader users.
import { useEffect, useMemo, useRef } from "react";
import type uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatClock, isoUtc } from "../time";

/** Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency. */
export const PALETTE = {
  blue: "#0072B2",
  vermillion: "#D55E00",
  green: "#009E73",
  orange: "#E69F00",
  purple: "#CC79A7",
  sky: "#56B4E9",
  black: "#000000",
} as const;

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color: string;
  dash?: number[];
  /** Draw each value as a point too (a sparse series: a lone bucket between empty ones has no line). */
  points?: boolean;
}

export interface TimeChartProps {
  id: string;
  title: string;
  /** Bucket starts, epoch seconds. */
  buckets: number[];
  step: number;
  series: ChartSeries[];
  /** What the chart shows in one sentence: the accessible name of the plot. */
  summary: string;
  /** The value axis's unit, written beside it (e.g. "seconds"). */
  yLabel?: string;
  height?: number;
  format?: (v: number | null) => string;
  /** A click on bucket ``index`` (and the table's link): where it leads. */
  bucketHref?: (index: number) => string | null;
  bucketLinkLabel?: string;
}

const plain = (v: number | null) => (v === null ? "—" : String(v));

/** Can this browser draw on a canvas? (jsdom cannot: the table and summary still render.) */
function canDraw(): boolean {
  try {
    return typeof window.matchMedia === "function" && !!document.createElement("canvas").getContext("2d");
  } catch {
    return false;
  }
}

function shortTime(epoch: number, step: number): string {
  return formatClock(epoch, step >= 3600);
}

/** The time axis's tick labels, in the same 24-hour form as everything else on the page: the day
 *  on the first tick and wherever it changes, the clock alone between; days alone for day ticks. */
function axisLabels(_u: uPlot, splits: number[], _axis: number, _space: number, incr: number): string[] {
  let day = "";
  return splits.map((t) => {
    const d = new Date(t * 1000).toDateString();
    const first = d !== day;
    day = d;
    if (incr >= 86400) return formatClock(t, true).replace(/,?\s*\d\d:\d\d$/, "");
    return formatClock(t, first);
  });
}

export function TimeChart({ id, title, buckets, step, series, summary, height = 180, format = plain, bucketHref, bucketLinkLabel, yLabel }: TimeChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const hrefRef = useRef(bucketHref);
  hrefRef.current = bucketHref;
  const shape = series.map((s) => s.label).join("|");
  const data = useMemo(() => [buckets, ...series.map((s) => s.values)] as uPlot.AlignedData, [buckets, series]);
  const latestData = useRef(data);
  latestData.current = data;

  useEffect(() => {
    const el = box.current;
    if (!el || !canDraw()) return undefined;
    let cleanup: (() => void) | null = null;
    let cancelled = false;
    // Loaded on first use (its own chunk; it reads matchMedia as it loads, which jsdom lacks).
    void import("uplot").then(({ default: UPlot }) => {
      if (cancelled) return;
      cleanup = draw(UPlot, el);
    });
    return () => {
      cancelled = true;
      cleanup?.();
    };
    // Rebuilt only when the set of series changes; new data goes through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, height]);

  function draw(UPlot: typeof uPlot, el: HTMLDivElement): () => void {
    const width = Math.max(240, el.clientWidth || 600);
    const opts: uPlot.Options = {
      width,
      height,
      // the legend names each series (colour and dash); the values are in "Show as table", so a
      // legend that is not hovered does not read "--"
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1)] } },
      axes: [{ stroke: "#444", values: axisLabels }, yLabel ? { stroke: "#444", size: 48, label: yLabel, labelSize: 18 } : { stroke: "#444", size: 48 }],
      series: [
        {},
        ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, dash: s.dash, points: { show: !!s.points, size: 5 },
          spanGaps: false, value: (_u: uPlot, v: number | null) => format(v) })),
      ],
    };
    const u = new UPlot(opts, latestData.current, el);
    plot.current = u;
    const onClick = () => {
      const idx = u.cursor.idx;
      if (idx === null || idx === undefined) return;
      const target = hrefRef.current?.(idx);
      if (target) window.location.hash = target.replace(/^#/, "");
    };
    u.over.addEventListener("click", onClick);
    const resize = new ResizeObserver(() => {
      const w = Math.max(240, el.clientWidth || width);
      if (w !== u.width) u.setSize({ width: w, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.over.removeEventListener("click", onClick);
      u.destroy();
      plot.current = null;
    };
  }

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return (
    <figure className="chart" aria-labelledby={`${id}-title`} data-testid={`chart-${id}`}>
      <figcaption>
        <h3 id={`${id}-title`} className="chart-title">{title}</h3>
        <p className="muted small" data-testid={`chart-${id}-summary`}>{summary}</p>
      </figcaption>
      <div ref={box} className={`chart-plot${bucketHref ? " clickable" : ""}`} role="img" aria-label={`${title}: ${summary}`}
        data-points={buckets.length} />
      <details className="chart-table">
        <summary>Show as table</summary>
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">{title}, per {step >= 3600 ? `${step / 3600} h` : `${step / 60} min`} bucket</caption>
            <thead>
              <tr>
                <th scope="col">Bucket (UTC)</th>
                {series.map((s) => <th scope="col" key={s.label}>{s.label}</th>)}
                {bucketHref ? <th scope="col"><span className="visually-hidden">Link</span></th> : null}
              </tr>
            </thead>
            <tbody>
              {buckets.map((b, i) => {
                const link = bucketHref?.(i) ?? null;
                return (
                  <tr key={b}>
                    <th scope="row"><time dateTime={isoUtc(b)}>{shortTime(b, step)}</time></th>
                    {series.map((s) => <td key={s.label}>{format(s.values[i] ?? null)}</td>)}
                    {bucketHref ? <td>{link ? <a href={link}>{bucketLinkLabel ?? "Open"}</a> : null}</td> : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
