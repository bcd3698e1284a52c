import { useState } from "react";
import { actions } from "../actions";
import { useConsole } from "../context";
import { explainError, type Explanation } from "../problems";
import { Confirm } from "./Confirm";
import { ProblemMessage } from "./ProblemMessage";

/** Test / Enable / Disable… for one channel, for operators (the ``operate_dlq`` capability, which
 *  every ``/api/v1/channels`` endpoint requires; the server still decides). Disable asks first (a
 *  disabled channel delivers nothing); a refusal (``channel_routed``: the active policy routes to
 *  it) and a test's answer are shown beside the buttons. ``onChanged`` re-reads the view. */
export function ChannelActions({ name, enabled, onChanged }: { name: string; enabled: boolean; onChanged: () => void }) {
  const { api, me } = useConsole();
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  if (!me.capabilities.operate_dlq) return null;

  async function run(fn: () => Promise<{ ok: boolean; text: string }>) {
    setBusy(true);
    setProblem(null);
    setResult(null);
    try {
      setResult(await fn());
      onChanged();
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  }

  const test = () => run(async () => {
    const r = await actions.channelTest(api, name);
    return r.success
      ? { ok: true, text: `Test message accepted: ${r.answer}` }
      : { ok: false, text: `Test message failed: ${r.error ?? r.answer}` };
  });
  const enable = () => run(async () => {
    await actions.channelEnable(api, name);
    return { ok: true, text: "Enabled: it takes notifications again." };
  });
  const disable = () => run(async () => {
    await actions.channelDisable(api, name);
    return { ok: true, text: "Disabled: requests that name it are refused until it is enabled." };
  });

  return (
    <div className="channel-actions">
      <div className="actions" role="group" aria-label={`Actions for channel ${name}`}>
        <button type="button" className="btn-secondary" disabled={busy} onClick={() => void test()}
          aria-label={`Test ${name}`}>Test</button>
        {enabled ? (
          <button type="button" className="btn-danger" disabled={busy || confirming} onClick={() => setConfirming(true)}
            aria-label={`Disable ${name}`}>Disable…</button>
        ) : (
          <button type="button" className="btn-primary" disabled={busy} onClick={() => void enable()}
            aria-label={`Enable ${name}`}>Enable</button>
        )}
      </div>
      {confirming ? (
        <Confirm title={`Disable channel ${name}?`} confirmLabel="Disable" danger busy={busy}
          onConfirm={() => void disable()} onCancel={() => setConfirming(false)}>
          <p>A disabled channel takes no new notifications: a request that names it is refused until it is enabled again (here, with Enable).</p>
        </Confirm>
      ) : null}
      {result ? (
        <p className={`small ${result.ok ? "ok" : "bad"}`} role="status" data-testid={`channel-result-${name}`}>{result.text}</p>
      ) : null}
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
    </div>
  );
}
