/**
 * The replication state machine of one kind: a pure function of (state, event). No I/O, clock or
 * randomness: times and new ids arrive inside events. The driver adopts `state` at once (so
 * concurrent checks see it), then performs `effects` in order before answering the request.
 *
 *   const r = step(s, { type: 'promote', force: false, behind: null, primaryClusterAddr: '' });
 *   if (!r.ok) throw refusalError(r.error);       // 400, or 503 when still catching up
 *   s = r.state; for (const e of r.effects) await perform(e);
 *
 *   const boot = resume(loaded);                   // after a restart
 */
import { wrongMode } from './describe.js';
import { enablePrimary, stepPrimary } from './primary.js';
import { beginActivation, stepBootstrapping, stepSecondary } from './secondary.js';
import type { Effect, Event, State, StepResult } from './types.js';

export function step(state: State, event: Event): StepResult {
  switch (state.mode) {
    case 'disabled':
      switch (event.type) {
        case 'enablePrimary':
          return enablePrimary(state, event);
        case 'enableSecondary':
          // Only the mode is checked here; the driver then redeems the token and steps `redeemed`.
          return { ok: true, state, effects: [{ type: 'redeem' }] };
        case 'redeemed':
          return beginActivation(state, event);
        default:
          return wrongMode(state, event.type);
      }
    case 'primary':
      return stepPrimary(state, event);
    case 'secondary':
      return stepSecondary(state, event);
    case 'bootstrapping':
      return stepBootstrapping(state, event);
  }
}

/**
 * The state and effects to start from after a restart, given the persisted state: the starting
 * effects of each mode again, and a secondary back at idle until its stream reports otherwise.
 */
export function resume(state: State): { readonly state: State; readonly effects: readonly Effect[] } {
  switch (state.mode) {
    case 'disabled':
      return { state, effects: [] };
    case 'primary':
      return { state, effects: [{ type: 'startServer' }] };
    case 'bootstrapping':
      return { state, effects: [{ type: 'wipe' }, { type: 'connect', primary: state.primary }] };
    case 'secondary': {
      const idle = { ...state, state: 'idle' as const };
      return { state: idle, effects: state.primary === null ? [] : [{ type: 'connect', primary: state.primary }] };
    }
  }
}
