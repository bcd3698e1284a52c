import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createContext, useContext, useMemo, useState, type ReactNode } from "react";
import { isTransient, type Api } from "./api";
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

/** A failed read is retried at most this many times, and only when it may pass next time. */
export const READ_RETRIES = 3;

/** Whether TanStack retries a read that failed ``failures`` times with ``err``: a network error
 *  or a 5xx, at most ``READ_RETRIES`` times; never a 4xx (the same request gets the same answer). */
export function retryRead(failures: number, err: unknown): boolean {
  return failures < READ_RETRIES && isTransient(err);
}

/** The console's server state (TanStack Query): a read retried only when it may pass
 *  (``retryRead``), every read sent whatever the browser thinks of the network (a failure is
 *  shown as one), and no re-read on focus (the live stream and the views' safety re-read keep
 *  them current). A write is never retried. */
export function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: retryRead, networkMode: "always", refetchOnWindowFocus: false, refetchOnReconnect: false },
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
