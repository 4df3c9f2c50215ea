/**
 * The logical, encrypted key/value view that services use once the node is unsealed. Values are
 * plaintext here; the implementation encrypts them at the barrier, classifies each key (see
 * keyspace.ts), and commits data, WAL entry and Merkle update in one atomic, fsynced batch.
 *
 *   await store.commit([{ type: 'put', key: 'sys/policy/ops', value: Buffer.from(json) }]);
 *   const v = await store.get('sys/policy/ops');
 *   await store.list('logical/1b2c/');   // ['a', 'dir/']
 */
export type Op =
  | { readonly type: 'put'; readonly key: string; readonly value: Buffer }
  | { readonly type: 'del'; readonly key: string };

export interface Store {
  get(key: string): Promise<Buffer | undefined>;
  /**
   * Vault's list: the direct children of `prefix` (which ends with '/' or is ''), sorted; a child
   * that has children of its own appears once, with a trailing '/'.
   */
  list(prefix: string): Promise<string[]>;
  /** All ops or none, durable before the promise resolves. */
  commit(ops: readonly Op[]): Promise<void>;
  /**
   * Optional: `decode` of the stored value, remembered while that stored value is unchanged (the
   * barrier: by the identity of the ciphertext its read cache holds), so a hot record is decrypted
   * and decoded once. Callers go through `getDecoded()`, which falls back to get + decode.
   */
  getDecoded?<T>(key: string, decode: Decoder<T>): Promise<Readonly<T> | undefined>;
}

/**
 * A decoder whose results `getDecoded` may hand to many callers: it must be pure, and its result
 * is frozen (deeply) before it is shared, so no caller can change what the next one reads.
 */
export type Decoder<T> = (value: Buffer) => T;

/** `decode(await store.get(key))` (undefined when absent), through the store's memo where it has one. */
export async function getDecoded<T>(store: Store, key: string, decode: Decoder<T>): Promise<Readonly<T> | undefined> {
  if (store.getDecoded !== undefined) return store.getDecoded(key, decode);
  const raw = await store.get(key);
  return raw === undefined ? undefined : decode(raw);
}

/** Freezes `value` and everything reachable from it (plain data: objects and arrays). */
export function deepFreeze<T>(value: T): Readonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A view of `store` under `prefix`: what a mount's engine sees. */
export class ScopedStore implements Store {
  constructor(
    private readonly store: Store,
    readonly prefix: string,
  ) {}

  get(key: string): Promise<Buffer | undefined> {
    return this.store.get(this.prefix + key);
  }

  list(prefix: string): Promise<string[]> {
    return this.store.list(this.prefix + prefix);
  }

  commit(ops: readonly Op[]): Promise<void> {
    return this.store.commit(ops.map((op) => ({ ...op, key: this.prefix + op.key })));
  }

  getDecoded<T>(key: string, decode: Decoder<T>): Promise<Readonly<T> | undefined> {
    return getDecoded(this.store, this.prefix + key, decode);
  }
}

/** A plain in-memory Store for unit tests of services. */
export class MapStore implements Store {
  readonly data = new Map<string, Buffer>();

  async get(key: string): Promise<Buffer | undefined> {
    return this.data.get(key);
  }

  async list(prefix: string): Promise<string[]> {
    const out = new Set<string>();
    for (const k of this.data.keys()) {
      if (!k.startsWith(prefix)) continue;
      const rest = k.slice(prefix.length);
      const slash = rest.indexOf('/');
      out.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...out].sort();
  }

  async commit(ops: readonly Op[]): Promise<void> {
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, op.value);
      else this.data.delete(op.key);
    }
  }
}
