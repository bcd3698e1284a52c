// A list view's filters come from the address, which a person can edit by hand (or a link can
// truncate): a value that does not parse is dropped and named, never sent to the server hidden
// behind a form control that cannot show it.
import { isEpoch } from "./time";

export interface FilterRule {
  ok: (value: string) => boolean;
  /** Why a value was dropped: "not a time". */
  what: string;
}
export type FilterRules = Partial<Record<string, FilterRule>>;

/** A time filter: epoch seconds that make a date. */
export const TIME_FILTER: FilterRule = {
  ok: (v) => v.trim() !== "" && isEpoch(Number(v)),
  what: "not a time",
};

/** The address's filters among ``fields`` a view uses (``active``) and those it drops because
 *  their value breaks its rule (``dropped``: "since “garbage” (not a time)"). Names that are not
 *  in ``fields`` are ignored; a field without a rule takes any text. */
export function readFilters(fields: readonly string[], rules: FilterRules, filters: Record<string, string>):
  { active: Record<string, string>; dropped: string[] } {
  const active: Record<string, string> = {};
  const dropped: string[] = [];
  for (const f of fields) {
    const v = filters[f];
    if (!v) continue;
    const rule = rules[f];
    if (rule && !rule.ok(v)) dropped.push(`${f} “${v}” (${rule.what})`);
    else active[f] = v;
  }
  return { active, dropped };
}
