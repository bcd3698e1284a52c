import { createContext, useContext } from "react";
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
