import { useQueryClient } from "@tanstack/react-query";
import { useId, useMemo, useState } from "react";
import { actions } from "../actions";
import { query } from "../api";
import { Confirm } from "../components/Confirm";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { ZonedTime } from "../components/ZonedTime";
import { useConsole } from "../context";
import { useReadModel } from "../hooks";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import type { OncallCalendar, Override, Shift } from "../types";
import { formatLocal } from "../time";
import { because, ONCALL_REFRESH_MS } from "./OnCall";

/** How many days the calendar shows, from the viewer's midnight today. */
export const CALENDAR_DAYS = 14;

/** The viewer's local midnights: ``days + 1`` epoch seconds, the first today's. */
export function localMidnights(now: Date, days: number): number[] {
  return Array.from({ length: days + 1 }, (_, i) => new Date(now.getFullYear(), now.getMonth(), now.getDate() + i).getTime() / 1000);
}

function clock(epoch: number): string {
  return new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(epoch * 1000));
}

/** The part of ``s`` inside the day ``[a, b)`` as text: "all day", "09:00–24:00", "00:00–09:00". */
export function span(s: { start: number; end: number }, a: number, b: number): string {
  if (s.start <= a && s.end >= b) return "all day";
  return `${s.start <= a ? "00:00" : clock(s.start)}–${s.end >= b ? "24:00" : clock(s.end)}`;
}

function within(shifts: Shift[], a: number, b: number): Shift[] {
  return shifts.filter((s) => s.start < b && s.end > a);
}

function ShiftList({ shifts, a, b, marked }: { shifts: Shift[]; a: number; b: number; marked: boolean }) {
  const found = within(shifts, a, b);
  if (!found.length) return <span className="muted">nobody</span>;
  return (
    <ul className="shifts">
      {found.map((s) => (
        <li key={`${s.start}-${s.user}`} data-source={s.source}>
          {span(s, a, b)} <strong>{s.user}</strong>
          {marked && s.source === "override" ? <span className="badge badge-pending">override</span> : null}
        </li>
      ))}
    </ul>
  );
}

/** The local date of a day row: "Thu 3 Dec". */
function day(epoch: number): string {
  return new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short" }).format(new Date(epoch * 1000));
}

/** ``YYYY-MM-DDTHH:MM`` of ``epoch`` in the viewer's zone (a datetime-local input's value). */
export function localInput(epoch: number): string {
  const d = new Date(epoch * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Epoch seconds of a datetime-local value (the viewer's zone); NaN for an empty or bad one
 *  (sent as is: the server refuses it with a problem naming the field). */
export function fromLocalInput(value: string): number {
  return value ? new Date(value).getTime() / 1000 : Number.NaN;
}

function OverrideForm({ schedule, people, onDone }: { schedule: string; people: string[]; onDone: (o: Override) => void }) {
  const { api } = useConsole();
  const id = useId();
  const now = Math.floor(Date.now() / 60000) * 60;
  const [user, setUser] = useState("");
  const [start, setStart] = useState(() => localInput(now));
  const [end, setEnd] = useState(() => localInput(now + 3600));
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Explanation | null>(null);

  async function submit() {
    setBusy(true);
    setProblem(null);
    try {
      const made = await actions.addOverride(api, schedule, user.trim(), fromLocalInput(start), fromLocalInput(end));
      onDone(made);
      setUser("");
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card oncall-override-form" aria-labelledby={`${id}-h`} onSubmit={(e) => { e.preventDefault(); void submit(); }}>
      <h3 id={`${id}-h`}>Add an override</h3>
      <p className="muted small">This person is on call instead, from then to then (your time zone).</p>
      <div className="oncall-fields">
        <label htmlFor={`${id}-user`}>Person</label>
        <input id={`${id}-user`} name="user" list={`${id}-people`} value={user} autoComplete="off"
          onChange={(e) => setUser(e.target.value)} />
        <datalist id={`${id}-people`}>{people.map((p) => <option key={p} value={p} />)}</datalist>
        <label htmlFor={`${id}-start`}>From</label>
        <input id={`${id}-start`} name="start" type="datetime-local" value={start} onChange={(e) => setStart(e.target.value)} />
        <label htmlFor={`${id}-end`}>To</label>
        <input id={`${id}-end`} name="end" type="datetime-local" value={end} onChange={(e) => setEnd(e.target.value)} />
      </div>
      <div className="actions">
        <button type="submit" disabled={busy}>Add override</button>
      </div>
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
    </form>
  );
}

function Overrides({ schedule, items, canWrite, onChange }: {
  schedule: string; items: Override[]; canWrite: boolean; onChange: () => void;
}) {
  const { api } = useConsole();
  const [confirming, setConfirming] = useState<Override | null>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Explanation | null>(null);

  async function remove(o: Override) {
    setBusy(true);
    setProblem(null);
    try {
      await actions.deleteOverride(api, schedule, o.id);
      setConfirming(null);
      onChange();
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
      {items.length ? (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col">From</th>
                <th scope="col">To</th>
                <th scope="col">Made by</th>
                {canWrite ? <th scope="col"><span className="visually-hidden">Actions</span></th> : null}
              </tr>
            </thead>
            <tbody>
              {items.map((o) => (
                <tr key={o.id} data-testid={`override-${o.user}`}>
                  <th scope="row">{o.user}</th>
                  <td><Time epoch={o.start} /></td>
                  <td><Time epoch={o.end} /></td>
                  <td>{o.created_by}{o.source === "ical" ? <span className="muted small"> (iCalendar import)</span> : null}</td>
                  {canWrite ? (
                    <td>
                      <button type="button" className="secondary" disabled={busy} onClick={() => setConfirming(o)}
                        aria-label={`Delete the override of ${o.user}`}>Delete</button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : <p className="muted">No overrides in these two weeks.</p>}
      {confirming ? (
        <Confirm title={`Delete the override of ${confirming.user}?`} confirmLabel="Delete override" danger busy={busy}
          onConfirm={() => void remove(confirming)} onCancel={() => setConfirming(null)}>
          <p>The layers decide who is on call again from <Time epoch={confirming.start} /> to <Time epoch={confirming.end} />.</p>
        </Confirm>
      ) : null}
    </>
  );
}

/** ``#/oncall/<schedule>``: the next two weeks, one row per day (the viewer's days): each layer's
 *  own shifts and the final shifts (overrides marked in words), the overrides, and for operators
 *  a form to add one and a button to delete one. */
export function OnCallCalendar({ schedule }: { schedule: string }) {
  const { me } = useConsole();
  const client = useQueryClient();
  const [days] = useState(() => localMidnights(new Date(), CALENDAR_DAYS));
  const path = `/ui/oncall/schedules/${encodeURIComponent(schedule)}/calendar${query({ start: days[0], end: days[CALENDAR_DAYS] })}`;
  const { data, error, refresh } = useReadModel<OncallCalendar>(path, { refetchInterval: ONCALL_REFRESH_MS });
  const [notice, setNotice] = useState<string | null>(null);
  const canWrite = me.capabilities.operate_dlq;
  const people = useMemo(() => [...new Set((data?.layers ?? []).flatMap((l) => l.members))].sort(), [data]);
  const nowEpoch = Date.now() / 1000;
  const current = data?.shifts.find((s) => s.start <= nowEpoch && nowEpoch < s.end) ?? null;

  function changed(message: string) {
    setNotice(message);
    void refresh().catch(() => undefined);
    void client.invalidateQueries({ queryKey: ["ui", "/ui/oncall"] });
  }

  return (
    <>
      <div className="view-head">
        <h1>Schedule {schedule}</h1>
      </div>
      <p><a href={href({ name: "oncall" })}>All schedules</a></p>
      <ProblemMessage explanation={error} />
      {notice ? <p className="flash" role="status">{notice}</p> : null}
      {data ? (
        <>
          <p data-testid="calendar-now">
            On call now:{" "}
            {current ? (
              <>
                <strong>{current.user}</strong>
                <span className="muted small"> ({because(current.source, current.layer)}, until </span>
                <ZonedTime epoch={current.end} zone={data.time_zone} />
                <span className="muted small">)</span>
              </>
            ) : <span className="badge badge-failed">nobody</span>}
          </p>
          <p className="muted small">
            Time zone {data.time_zone}{data.team ? `, team ${data.team}` : ""}. Days and times below are yours.
          </p>
          <h2>Next two weeks</h2>
          <div className="table-wrap">
            <table className="oncall-calendar" data-testid="calendar">
              <caption className="muted small">
                One row per day: each layer's own rotation, then who is paged (the final shifts, overrides marked).
              </caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  {data.layers.map((l) => <th scope="col" key={l.position}>Layer {l.name || l.position}</th>)}
                  <th scope="col">Final (who is paged)</th>
                </tr>
              </thead>
              <tbody>
                {days.slice(0, CALENDAR_DAYS).map((a, i) => (
                  <tr key={a} data-testid={`day-${i}`}>
                    <th scope="row">{day(a)}</th>
                    {data.layers.map((l) => <td key={l.position}><ShiftList shifts={l.shifts} a={a} b={days[i + 1]} marked={false} /></td>)}
                    <td className="final"><ShiftList shifts={data.shifts} a={a} b={days[i + 1]} marked /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <h2>Overrides</h2>
          <Overrides schedule={schedule} items={data.overrides} canWrite={canWrite} onChange={() => changed("Override deleted.")} />
          {canWrite ? (
            <OverrideForm schedule={schedule} people={people}
              onDone={(o) => changed(`Override added: ${o.user} is on call from ${formatLocal(o.start)}.`)} />
          ) : null}
        </>
      ) : null}
    </>
  );
}
