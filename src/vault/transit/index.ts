/**
 * The transit secrets engine (Vault's builtin/logical/transit): encryption, HMACs, hashes and
 * random bytes as a service, with named, versioned keys kept in the mount's storage. Paths are
 * matched here (mount-relative); the HTTP layer has already checked the token and ACL.
 *
 *   const transit = createTransitEngine();
 *   await transit.handle({ operation: 'update', path: 'encrypt/app', data: { plaintext: 'aGk=' } }, scoped);
 */
import { InvalidRequest, NotFound, UnsupportedOperation } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalRequest, LogicalResponse, Operation, SecretsEngine } from '../logical.js';
import { datakey, decrypt, encrypt, newMaterial, rewrap, type CryptDeps } from './crypt-paths.js';
import { intField, stringField } from './fields.js';
import { backupKey, configKey, createKey, deleteKey, exportKey, listKeys, readKey, restoreKey, rotateKey, trimKey } from './key-paths.js';
import { changePolicy, checkName, listPolicies, loadPolicy } from './keys-store.js';
import { generateAsymmetricAsync } from './asymmetric.js';
import { rotate, rotationDue } from './policy.js';
import { signData, verifyData } from './sign-paths.js';
import { hash, hmac, random } from './tool-paths.js';

export interface TransitOptions {
  readonly now?: () => Date;
}

type Handler = (store: Store, params: string[], data: Readonly<Record<string, unknown>>) => Promise<LogicalResponse | null> | LogicalResponse | null;

interface PathDef {
  readonly pattern: RegExp;
  readonly ops: Partial<Record<'read' | 'write' | 'delete' | 'list', Handler>>;
}

const WRITE_OPS: readonly Operation[] = ['create', 'update'];

const CACHE_CONFIG_KEY = 'config/cache';

function paths(deps: CryptDeps): PathDef[] {
  const name = (s: string | undefined): string => checkName(s ?? '');
  return [
    { pattern: /^keys\/?$/, ops: { list: (store) => listKeys(store) } },
    {
      pattern: /^keys\/([^/]+)$/,
      ops: {
        read: (store, [n], data) => readKey(store, name(n), data),
        write: (store, [n], data) => createKey(store, name(n), data, deps),
        delete: (store, [n]) => deleteKey(store, name(n)),
      },
    },
    { pattern: /^keys\/([^/]+)\/config$/, ops: { write: (store, [n], data) => configKey(store, name(n), data) } },
    { pattern: /^keys\/([^/]+)\/rotate$/, ops: { write: (store, [n]) => rotateKey(store, name(n), deps) } },
    { pattern: /^keys\/([^/]+)\/trim$/, ops: { write: (store, [n], data) => trimKey(store, name(n), data) } },
    { pattern: /^encrypt\/([^/]+)$/, ops: { write: (store, [n], data) => encrypt(store, name(n), data, deps) } },
    { pattern: /^decrypt\/([^/]+)$/, ops: { write: (store, [n], data) => decrypt(store, name(n), data) } },
    { pattern: /^rewrap\/([^/]+)$/, ops: { write: (store, [n], data) => rewrap(store, name(n), data) } },
    { pattern: /^datakey\/([^/]+)\/([^/]+)$/, ops: { write: (store, [kind, n], data) => datakey(store, kind ?? '', name(n), data) } },
    { pattern: /^random(?:\/([^/]+))?(?:\/([^/]+))?$/, ops: { write: (_s, [source, bytes], data) => random(data, source, bytes) } },
    { pattern: /^hash(?:\/([^/]+))?$/, ops: { write: (_s, [alg], data) => hash(data, alg) } },
    { pattern: /^hmac\/([^/]+)(?:\/([^/]+))?$/, ops: { write: (store, [n, alg], data) => hmac(store, name(n), data, alg) } },
    { pattern: /^sign\/([^/]+)(?:\/([^/]+))?$/, ops: { write: (store, [n, alg], data) => signData(store, name(n), data, alg) } },
    { pattern: /^verify\/([^/]+)(?:\/([^/]+))?$/, ops: { write: (store, [n, alg], data) => verifyData(store, name(n), data, alg) } },
    { pattern: /^export\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/, ops: { read: (store, [type, n, version], data) => exportKey(store, type ?? '', name(n), version, stringField(data, 'format')) } },
    { pattern: /^backup\/([^/]+)$/, ops: { read: (store, [n]) => backupKey(store, name(n), deps) } },
    { pattern: /^restore(?:\/([^/]+))?$/, ops: { write: (store, [n], data) => restoreKey(store, n === undefined ? undefined : name(n), data, deps) } },
    {
      pattern: /^cache-config$/,
      ops: {
        read: async (store) => {
          const raw = await store.get(CACHE_CONFIG_KEY);
          return { data: { size: raw === undefined ? 0 : (JSON.parse(raw.toString('utf8')) as { size: number }).size } };
        },
        write: async (store, _p, data) => {
          const size = intField(data, 'size');
          if (size !== 0 && size < 10) throw new InvalidRequest('size must be 0 or a value greater or equal to 10');
          await store.commit([{ type: 'put', key: CACHE_CONFIG_KEY, value: Buffer.from(JSON.stringify({ size }), 'utf8') }]);
          return { data: null, warnings: ['cache configurations will be applied when this backend is restarted'] };
        },
      },
    },
  ];
}

async function autoRotate(store: Store, deps: CryptDeps): Promise<number> {
  let rotated = 0;
  for (const name of await listPolicies(store)) {
    const p = await loadPolicy(store, name).catch(() => undefined);
    if (p === undefined || !rotationDue(p, deps.now())) continue;
    // Checked again under the key's lock: a rotation by hand meanwhile makes this one moot.
    const material = await newMaterial(p.type, deps);
    await changePolicy(store, name, (current) => {
      if (current === undefined || !rotationDue(current, deps.now())) return current;
      rotated++;
      return rotate(current, deps.now(), material);
    });
  }
  return rotated;
}

function opKind(op: Operation): 'read' | 'write' | 'delete' | 'list' | undefined {
  if (op === 'read' || op === 'delete' || op === 'list') return op;
  return WRITE_OPS.includes(op) ? 'write' : undefined;
}

/** The transit engine, and the auto-rotation sweep of one mount's keys. */
export interface TransitEngine extends SecretsEngine {
  /**
   * Rotates every key of the mount whose auto_rotate_period has passed (Vault's periodic
   * function); the number rotated. A key this node may not write (a performance or DR secondary's
   * replicated mount) is left to its primary: the refusal ends the sweep of that mount quietly.
   */
  autoRotate(store: Store): Promise<number>;
}

export function createTransitEngine(options: TransitOptions = {}): TransitEngine {
  const deps: CryptDeps = { now: options.now ?? (() => new Date()), generate: (type) => generateAsymmetricAsync(type) };
  const table = paths(deps);
  return {
    async handle(req: LogicalRequest, store: Store): Promise<LogicalResponse | null> {
      for (const def of table) {
        const m = def.pattern.exec(req.path);
        if (!m) continue;
        const kind = opKind(req.operation);
        const handler = kind === undefined ? undefined : def.ops[kind];
        if (handler === undefined) throw new UnsupportedOperation();
        return handler(store, m.slice(1) as string[], req.data);
      }
      throw new NotFound([`no handler for route "${req.path.slice(0, 128)}". route entry not found.`]);
    },
    autoRotate: (store) => autoRotate(store, deps),
  };
}
