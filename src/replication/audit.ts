/**
 * The operator audit trail of replication: every operation the routes reach (enable, demote,
 * disable, tokens issued and revoked, activation, promote, update-primary, DR operation tokens
 * created, used and deleted, reindex) writes exactly one info line to the node logger with the
 * operation's name and its outcome. Arguments are never logged wholesale: only the fields a
 * `detail` function picks, which must hold no token or secret.
 *
 *   const dr = audited(log, service, { enablePrimary: { op: 'dr/primary/enable' } });
 *   await dr.enablePrimary('');   // {"audit":"replication","op":"dr/primary/enable","outcome":"ok"}
 *
 * Given `events`, each call is also a replication event (events.ts) of the op's kind (`dr` unless
 * the op starts with `performance/`) and type (the op without its kind), with the same outcome and
 * detail; its fields go on the same audit line, so an operation is still one log line.
 */
import type { Logger } from 'pino';
import { isTesseraError } from '../core/errors.js';
import type { Kind } from '../core/replication/index.js';
import { logFields, type ReplicationEvents } from './events.js';

/** Any async method: every function's parameters are assignable to `never[]`. */
type AnyFn = (...args: never[]) => Promise<unknown>;

export interface AuditSpec<F extends AnyFn> {
  readonly op: string;
  /** Safe fields to log from the arguments and the result (never a token). */
  readonly detail?: (args: Parameters<F>, result: Awaited<ReturnType<F>> | undefined) => Record<string, unknown>;
  /** For a call that answers a refusal instead of throwing it: whether its result is one. */
  readonly refused?: (result: Awaited<ReturnType<F>>) => boolean;
}

export type AuditSpecs<S> = { readonly [K in keyof S]?: S[K] extends AnyFn ? AuditSpec<S[K]> : never };

/** The event kind and type of an audited op: `performance/primary/enable` -> performance, primary/enable. */
export function eventOfOp(op: string): { kind: Kind; type: string } {
  if (op.startsWith('performance/')) return { kind: 'performance', type: op.slice('performance/'.length) };
  return { kind: 'dr', type: op.startsWith('dr/') ? op.slice(3) : op };
}

/** Logs one line per call of each method named in `specs`; other methods pass through unlogged. */
export function audited<S extends object>(log: Logger, service: S, specs: AuditSpecs<S>, events?: ReplicationEvents): S {
  const line = (op: string, fields: Record<string, unknown>): Record<string, unknown> => {
    if (!events) return fields;
    const { kind, type } = eventOfOp(op);
    return { ...logFields(events.record(kind, type, fields)), ...fields };
  };
  const wrapped = new Map<PropertyKey, AnyFn>();
  for (const [name, spec] of Object.entries(specs) as [string, AuditSpec<AnyFn> | undefined][]) {
    const fn = (service as Record<string, unknown>)[name];
    if (spec === undefined || typeof fn !== 'function') continue;
    wrapped.set(name, async (...args: unknown[]) => {
      try {
        const result: unknown = await (fn as (...a: unknown[]) => Promise<unknown>).apply(service, args);
        const outcome = spec.refused?.(result) === true ? 'refused' : 'ok';
        log.info({ audit: 'replication', op: spec.op, ...line(spec.op, { outcome, ...spec.detail?.(args as Parameters<AnyFn>, result as Awaited<ReturnType<AnyFn>>) }) }, `replication ${spec.op}: ${outcome}`);
        return result;
      } catch (e) {
        const code = isTesseraError(e) ? e.code : 'internal';
        log.info({ audit: 'replication', op: spec.op, ...line(spec.op, { outcome: 'refused', error_code: code, ...spec.detail?.(args as Parameters<AnyFn>, undefined) }) }, `replication ${spec.op}: refused (${code})`);
        throw e;
      }
    });
  }
  // Class instances keep their prototype methods (and private fields): unlisted calls pass through.
  return new Proxy(service, {
    get(target, prop) {
      const own = wrapped.get(prop);
      if (own !== undefined) return own;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as AnyFn).bind(target) : value;
    },
  });
}
