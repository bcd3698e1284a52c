import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { query } from "../api";
import { useConsole } from "../context";
import type { Groups } from "../types";

export type Filters = Record<string, string | undefined>;

const LABEL: Record<string, string> = {
  source: "Source", severity: "Severity", channel: "Channel", reason: "Error reason", dedup_key: "Dedup key",
};

function valueText(v: string | string[] | null): string {
  if (v === null || v === undefined || v === "") return "(none)";
  return Array.isArray(v) ? v.join(", ") || "(none)" : v;
}

/** Group a list by one field (the server counts the largest groups for the current filters);
 *  a group's button filters the list to it; the active filters show as removable chips. */
export function GroupBar({ path, groups, filterNames, filters, onChange }: {
  path: string;
  groups: readonly string[];
  filterNames: readonly string[];
  filters: Filters;
  onChange: (f: Filters) => void;
}) {
  const { api } = useConsole();
  const [by, setBy] = useState(groups[0]);
  const params = { by, ...filters };
  // The groups of the last filters stay on screen while the new ones are read; none on a failure.
  const { data: body } = useQuery({
    queryKey: ["ui", path, params],
    queryFn: ({ signal }) => api.get<Groups>(path + query(params), signal),
    placeholderData: keepPreviousData,
  });

  const active = filterNames.filter((n) => filters[n]);
  return (
    <div className="groups" role="group" aria-label="Group and filter">
      <label htmlFor={`${path}-by`}>Group by</label>
      <select id={`${path}-by`} value={by} onChange={(e) => setBy(e.target.value)}>
        {groups.map((g) => <option key={g} value={g}>{LABEL[g] ?? g}</option>)}
      </select>
      <ul className="group-list" aria-label={`Groups by ${LABEL[by] ?? by}`}>
        {(body?.groups ?? []).map((g) => {
          const value = Array.isArray(g.value) ? g.value[0] : g.value;
          return (
            <li key={valueText(g.value)}>
              <button type="button" className="chip" disabled={!value} title={`${valueText(g.value)}: ${g.count}`}
                onClick={() => value && onChange({ ...filters, [by]: value })}>
                <span className="chip-value">{valueText(g.value)}</span> <span className="count">{g.count}</span>
              </button>
            </li>
          );
        })}
      </ul>
      {active.length ? (
        <p className="active-filters">
          Filtered by{" "}
          {active.map((n) => (
            <button key={n} type="button" className="chip active" aria-label={`Remove filter ${LABEL[n] ?? n}: ${filters[n]}`}
              onClick={() => onChange({ ...filters, [n]: undefined })}>
              {LABEL[n] ?? n}: {filters[n]} ×
            </button>
          ))}
        </p>
      ) : null}
    </div>
  );
}
