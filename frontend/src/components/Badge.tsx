export function StatusBadge({ value }: { value: string | null | undefined }) {
  const v = value ?? "—";
  return <span className={`badge badge-${v.toLowerCase().replace(/[^a-z_]/g, "")}`}>{v}</span>;
}
