// Bulk DLQ operations: one request per item (the API has no batch endpoint), a few at a time, and
// a result for every item so a partial failure is visible item by item.
import { explainError } from "./problems";

export interface ItemResult {
  id: string;
  ok: boolean;
  message: string;
}

export async function runBulk(
  ids: string[],
  fn: (id: string) => Promise<unknown>,
  okMessage: string,
  concurrency = 4,
): Promise<ItemResult[]> {
  const results: ItemResult[] = new Array(ids.length);
  let next = 0;
  async function worker() {
    while (next < ids.length) {
      const i = next++;
      try {
        await fn(ids[i]);
        results[i] = { id: ids[i], ok: true, message: okMessage };
      } catch (err) {
        const e = explainError(err);
        results[i] = { id: ids[i], ok: false, message: e.detail ? `${e.headline} ${e.detail}` : e.headline };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  return results;
}
