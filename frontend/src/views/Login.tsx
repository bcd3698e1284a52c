import { useState, type FormEvent } from "react";
import type { Api, Session } from "../api";
import { ProblemMessage } from "../components/ProblemMessage";
import { explainError, type Explanation } from "../problems";

export function Login({ api, onLogin, notice }: { api: Api; onLogin: (s: Session) => void; notice: string | null }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Explanation | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    try {
      const session = await api.login(username, password);
      setPassword("");
      onLogin(session);
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="login">
      <h1>UNS console</h1>
      {notice ? <p className="notice" role="status">{notice}</p> : null}
      <form onSubmit={submit} aria-label="Log in">
        <label htmlFor="username">Username</label>
        <input id="username" name="username" autoComplete="username" value={username}
          onChange={(e) => setUsername(e.target.value)} required autoFocus />
        <label htmlFor="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" value={password}
          onChange={(e) => setPassword(e.target.value)} required />
        <button type="submit" className="btn-primary" disabled={busy}>{busy ? "Logging in…" : "Log in"}</button>
      </form>
      <ProblemMessage explanation={problem} />
      <p className="muted small" data-testid="session-note">Logging in starts a session in this browser: reloading the page keeps you logged in until you log out or the session expires.</p>
    </main>
  );
}
