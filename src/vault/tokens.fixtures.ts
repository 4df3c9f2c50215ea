/**
 * Shared setup of the TokenStore unit tests (tokens.test.ts, tokens.tree.test.ts): a store on an
 * injected clock over a SlowStore, and helpers that look a token up or fail the test.
 *
 *   const { clock, store, tokens } = setup();
 *   const root = await rootView(tokens);       // { token, view } of a fresh root token
 *   clock.ms += 3_600_000;                      // time moves only when the test says so
 */
import type { MapStore } from '../storage/store.js';
import type { TokenEntryView } from './tokens.js';
import { TokenStore } from './tokens.js';
import { SlowStore } from '../../test/support/slow-store.js';

export const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
export const TOKEN_RE = /^hvs\.[0-9A-Za-z]{24}$/;

export function setup() {
  const clock = { ms: T0 };
  const store = new SlowStore();
  const tokens = new TokenStore(store, { now: () => clock.ms });
  return { clock, store, tokens };
}

export async function rootView(tokens: TokenStore): Promise<{ token: string; view: TokenEntryView }> {
  const { token } = await tokens.createRoot();
  const view = await tokens.lookup(token);
  if (view === undefined) throw new Error('root not found');
  return { token, view };
}

export async function view(tokens: TokenStore, token: string): Promise<TokenEntryView> {
  const v = await tokens.lookup(token);
  if (v === undefined) throw new Error('token not found');
  return v;
}

export function tokenEntryKeys(store: MapStore): string[] {
  return [...store.data.keys()].filter((k) => k.startsWith('local/token/id/'));
}
