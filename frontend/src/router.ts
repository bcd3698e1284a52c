import { useEffect, useState } from "react";

// Hash routes (#/dlq, #/notifications/<id>): the app works the same at / and /console/.
export type Route =
  | { name: "overview" }
  | { name: "inbox" }
  | { name: "dlq"; filters?: Record<string, string> }
  | { name: "policies" }
  | { name: "audit"; filters?: Record<string, string> }
  | { name: "channels" }
  | { name: "silences" }
  | { name: "oncall" }
  | { name: "oncall-schedule"; schedule: string }
  | { name: "my-pages" }
  | { name: "notifications"; filters?: Record<string, string> }
  | { name: "notification"; id: string };

export function parseRoute(hash: string): Route {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  const [head, ...rest] = path.split("/");
  switch (head) {
    case "dlq":
      // #/dlq?failed_since=..&failed_until=..: a chart's dead-letter bucket (or any DLQ filter).
      return search ? { name: "dlq", filters: Object.fromEntries(new URLSearchParams(search)) } : { name: "dlq" };
    case "inbox":
    case "policies":
    case "channels":
    case "silences":
      return { name: head };
    case "audit":
      return { name: "audit", filters: Object.fromEntries(new URLSearchParams(search)) };
    case "my-pages":
      return { name: head };
    case "oncall":
      if (rest[0]) return { name: "oncall-schedule", schedule: decodeURIComponent(rest[0]) };
      return { name: "oncall" };
    case "notifications":
      if (rest[0]) return { name: "notification", id: decodeURIComponent(rest[0]) };
      return { name: "notifications", filters: Object.fromEntries(new URLSearchParams(search)) };
    default:
      return { name: "overview" };
  }
}

export function href(route: Route): string {
  if (route.name === "notification") return `#/notifications/${encodeURIComponent(route.id)}`;
  if (route.name === "oncall-schedule") return `#/oncall/${encodeURIComponent(route.schedule)}`;
  if (route.name === "notifications" || route.name === "audit" || route.name === "dlq") {
    const q = new URLSearchParams(route.filters ?? {}).toString();
    return `#/${route.name}${q ? `?${q}` : ""}`;
  }
  return `#/${route.name}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}
