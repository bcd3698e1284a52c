import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createContext, useContext, useMemo, useState, type ReactNode } from "react";
import type { Api } from "./api";
import type { Me } from "./types";

export interface ConsoleContext {
  api: Api;
  me: Me;
}

export const Ctx = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const ctx = useContext(Ctx);
  if (!ctx) throw new Error("useConsole outside the logged-in console");
  return ctx;
}

/** The console's server state (TanStack Query): no retry of a failed read (the live refresh
 *  re-reads on its own cadence and shows the lag), every read sent whatever the browser thinks
 *  of the network (a failure is shown as one), and no re-read on focus (the live stream and the
 *  views' safety re-read keep them current). */
export function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: false, networkMode: "always", refetchOnWindowFocus: false, refetchOnReconnect: false },
      mutations: { retry: false, networkMode: "always" },
    },
  });
}

/** The logged-in console: the user and the client, and a query cache of this session's own
 *  (made here, so a logout, which unmounts this, leaves nothing cached for the next user). */
export function ConsoleProvider({ api, me, children }: { api: Api; me: Me; children: ReactNode }) {
  const [client] = useState(newQueryClient);
  const value = useMemo(() => ({ api, me }), [api, me]);
  return (
    <QueryClientProvider client={client}>
      <Ctx.Provider value={value}>{children}</Ctx.Provider>
    </QueryClientProvider>
  );
}
