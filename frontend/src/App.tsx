import { useCallback, useEffect, useMemo, useState } from "react";
import { Api, type Session } from "./api";
import { ProblemMessage } from "./components/ProblemMessage";
import { ViewBoundary } from "./components/ViewBoundary";
import { ConsoleProvider } from "./context";
import { explainError, type Explanation } from "./problems";
import { href, useRoute, type Route } from "./router";
import type { Me } from "./types";
import { AllNotifications } from "./views/AllNotifications";
import { Audit } from "./views/Audit";
import { Channels } from "./views/Channels";
import { Dlq } from "./views/Dlq";
import { Inbox } from "./views/Inbox";
import { Login } from "./views/Login";
import { MyPages } from "./views/MyPages";
import { OnCall } from "./views/OnCall";
import { OnCallCalendar } from "./views/OnCallCalendar";
import { NotificationDetail } from "./views/NotificationDetail";
import { Overview } from "./views/Overview";
import { Policies } from "./views/Policies";
import { Silences } from "./views/Silences";

const NAV: { route: Route; label: string }[] = [
  { route: { name: "overview" }, label: "Overview" },
  { route: { name: "inbox" }, label: "Inbox" },
  { route: { name: "dlq" }, label: "DLQ" },
  { route: { name: "notifications" }, label: "All" },
  { route: { name: "policies" }, label: "Policies" },
  { route: { name: "channels" }, label: "Channels" },
  { route: { name: "silences" }, label: "Silences" },
  { route: { name: "audit" }, label: "Audit" },
  { route: { name: "oncall" }, label: "On call" },
  { route: { name: "my-pages" }, label: "My pages" },
];

function View({ route }: { route: Route }) {
  switch (route.name) {
    case "inbox":
      return <Inbox />;
    case "dlq":
      return <Dlq key={href(route)} initial={route.filters} />;
    case "policies":
      return <Policies />;
    case "audit":
      return <Audit filters={route.filters ?? {}} />;
    case "channels":
      return <Channels />;
    case "silences":
      return <Silences />;
    case "oncall":
      return <OnCall />;
    case "oncall-schedule":
      return <OnCallCalendar key={route.schedule} schedule={route.schedule} />;
    case "my-pages":
      return <MyPages />;
    case "notification":
      return <NotificationDetail key={route.id} id={route.id} />;
    case "notifications":
      return <AllNotifications filters={route.filters ?? {}} />;
    default:
      return <Overview />;
  }
}

export function App({ api: given }: { api?: Api }) {
  const api = useMemo(() => given ?? new Api(), [given]);
  const [session, setSession] = useState<Session | null>(null);
  const [me, setMe] = useState<Me | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [resuming, setResuming] = useState(true);
  const route = useRoute();

  // A reload: the session cookie (HttpOnly, never visible here) may still hold a session.
  useEffect(() => {
    let live = true;
    api.resume<Me>().then((found) => {
      if (!live) return;
      if (found) {
        setMe(found);
        setSession({ username: found.username, expiry: found.token_expiry ?? Date.now() / 1000 + 3600 });
      }
    }, (err) => live && setProblem(explainError(err))).finally(() => live && setResuming(false));
    return () => {
      live = false;
    };
  }, [api]);

  const end = useCallback((message: string | null) => {
    api.forget();
    setSession(null);
    setMe(null);
    setNotice(message);
  }, [api]);

  useEffect(() => {
    api.onUnauthorized = () => end("Your session has ended. Log in again.");
    return () => {
      api.onUnauthorized = null;
    };
  }, [api, end]);

  // Log out when the session expires, whether or not a request notices first.
  useEffect(() => {
    if (!session) return;
    const ms = session.expiry * 1000 - Date.now();
    const timer = setTimeout(() => end("Your session expired. Log in again."), Math.max(0, Math.min(ms, 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [session, end]);

  useEffect(() => {
    if (!session || me) return;
    api.get<Me>("/ui/me").then(setMe, (err) => setProblem(explainError(err)));
  }, [api, session, me]);

  async function logout() {
    await api.logout();
    end("You have logged out.");
  }

  if (resuming) return <p aria-busy="true">Loading…</p>;
  if (!session) {
    return <Login api={api} notice={notice} onLogin={(s) => { setNotice(null); setProblem(null); setSession(s); }} />;
  }
  if (!me) return problem ? <ProblemMessage explanation={problem} /> : <p aria-busy="true">Loading…</p>;
  const current = route.name === "notification" ? null : route.name === "oncall-schedule" ? "oncall" : route.name;
  return (
    <ConsoleProvider api={api} me={me}>
      <a className="skip" href="#main">Skip to content</a>
      <header className="top">
        <span className="brand">UNS</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.label}>
                <a href={href(n.route)} aria-current={current === n.route.name ? "page" : undefined}>{n.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <span className="account">
          <span className="who" data-testid="who">
            {me.username}
            <span className="muted small"> ({me.groups.join(", ") || "no groups"})</span>
          </span>
          <button type="button" className="secondary" onClick={() => void logout()}>Log out</button>
        </span>
      </header>
      <main id="main" tabIndex={-1}>
        <ViewBoundary resetKey={href(route)} backHref={href({ name: "overview" })}>
          <View route={route} />
        </ViewBoundary>
      </main>
    </ConsoleProvider>
  );
}
