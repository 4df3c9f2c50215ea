/**
 * Wires `sys/generate-root` into a node: the shared generation mechanism over the node's store
 * (the attempt is a node-class record: it never replicates), the seal's threshold and unseal
 * keys, and the token store as issuer, so the decoded token is a new root token of this node
 * (root policy, no TTL, root namespace). One operator log line per operation, never a token.
 *
 *   const svc = wireGenerateRoot({ core, seal, lifecycle, log });
 *   routes.push(...generateRootRoutes(svc));
 */
import type { Logger } from 'pino';
import { isTesseraError } from '../core/errors.js';
import type { GenerationService } from '../http/routes/generate-root.js';
import { RootGeneration, type SealManager } from '../seal/index.js';
import type { VaultCore } from '../vault/core.js';
import type { SealLifecycle } from '../vault/lifecycle.js';

const PREFIX = 'node/generate-root/';

export function wireGenerateRoot(o: { core: VaultCore; seal: SealManager; lifecycle: SealLifecycle; log: Logger }): GenerationService {
  const { core, seal } = o;
  const gen = new RootGeneration({
    records: {
      get: (name) => core.store().get(PREFIX + name),
      put: (name, value) => core.store().commit([value === undefined ? { type: 'del', key: PREFIX + name } : { type: 'put', key: PREFIX + name, value }]),
    },
    attemptRecord: 'attempt',
    what: 'root token',
    threshold: async () => (await seal.status()).t,
    verifyShares: (shares) => seal.verifyRootKeyShares(shares),
    issue: async (token) => {
      await core.tokens.createRoot({ id: token });
    },
  });
  // Shares are root key material: a sealed node keeps none of them.
  o.lifecycle.subscribe({ sealing: () => gen.forgetShares() });

  const log = o.log.child({ component: 'generate-root' });
  const logged = <A extends unknown[], R>(op: string, fn: (...a: A) => Promise<R>, detail: (r: R) => Record<string, unknown> = () => ({})) =>
    async (...a: A): Promise<R> => {
      try {
        const r = await fn(...a);
        log.info({ audit: 'generate-root', op, outcome: 'ok', ...detail(r) }, `generate-root ${op}: ok`);
        return r;
      } catch (e) {
        const code = isTesseraError(e) ? e.code : 'internal';
        log.info({ audit: 'generate-root', op, outcome: 'refused', error_code: code }, `generate-root ${op}: refused (${code})`);
        throw e;
      }
    };
  return {
    status: () => gen.status(),
    start: logged('attempt', (r) => gen.start(r), (r) => ({ encoding: r.pgp_fingerprint ? 'pgp' : 'otp' })),
    cancel: logged('cancel', () => gen.cancel()),
    update: logged('update', (r) => gen.update(r), (r) => ({ progress: r.progress, required: r.required, token_created: r.complete })),
  };
}
