/**
 * Vault's response wrapping: a response is stored under a single-use token (policies
 * ['response-wrapping'], num_uses 1, the wrap TTL) and handed out once, by `unwrap`.
 *
 *   const wrapping = new Wrapping(tokens, store);
 *   const info = await wrapping.wrap({ data: { secret: 'x' } }, 300, 'sys/wrapping/wrap');
 *   await wrapping.lookup(info.token);   // { creation_path, creation_time, creation_ttl }
 *   await wrapping.unwrap(info.token);   // { data: { secret: 'x' } }; a second unwrap is refused
 *
 * Activation tokens build on `wrap`: `info.token` is the JWT's `jti` and `info.accessor` its
 * `accessor` claim; the caller then puts the signed JWT in `wrap_info.token`. A caller that must
 * know the wrapping token up front passes it as `opts.id`.
 *
 * The stored response is sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the
 * wrapping token, so storage never holds a readable wrapped secret, nor a wrapped `client_token`.
 *
 * The router must not spend the wrapping token through `validateForUse` on `sys/wrapping/*`: its
 * only use is the unwrap itself.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Internal, InvalidRequest } from '../core/errors.js';
import type { Store } from '../storage/store.js';
import { WRAPPING_POLICY, rfc3339 } from './token-entry.js';
import { tokenKeys } from './token-keys.js';
import type { TokenStore } from './tokens.js';

/** What can be wrapped: the parts of a response envelope a client gets back on unwrap. */
export type WrappedResponse = {
  readonly data?: Record<string, unknown> | null;
  readonly auth?: Record<string, unknown> | null;
  readonly warnings?: readonly string[] | null;
};

/** Vault's `wrap_info`. */
export type WrapInfo = {
  readonly token: string;
  readonly accessor: string;
  /** Integer seconds. */
  readonly ttl: number;
  /** RFC 3339. */
  readonly creation_time: string;
  readonly creation_path: string;
  /** The accessor of a wrapped token (a wrapped `auth`), else ''. */
  readonly wrapped_accessor: string;
};

export type WrapLookup = {
  readonly creation_path: string;
  readonly creation_time: string;
  readonly creation_ttl: number;
};

export interface WrappingOptions {
  /** Cryptographically random bytes (the AES-GCM nonce). */
  readonly random?: (size: number) => Buffer;
}

export interface WrapOptions {
  /** The wrapping token to use instead of a random one; must be unguessable and unused. */
  readonly id?: string;
}

const responseSchema = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  auth: z.record(z.string(), z.unknown()).nullable().optional(),
  warnings: z.array(z.string()).nullable().optional(),
});

/** The stored form: the response sealed under the wrapping token; the rest lives in its entry. */
const recordSchema = z.object({ v: z.literal(1), nonce: z.string(), sealed: z.string() });

const INVALID = 'wrapping token is not valid or does not exist';
const invalid = (): InvalidRequest => new InvalidRequest(INVALID);
const KEY_INFO = 'tessera/wrap/v1';

export class Wrapping {
  readonly #tokens: TokenStore;
  readonly #store: Store;
  readonly #random: (size: number) => Buffer;

  constructor(tokens: TokenStore, store: Store, opts: WrappingOptions = {}) {
    this.#tokens = tokens;
    this.#store = store;
    this.#random = opts.random ?? randomBytes;
  }

  /** Stores `response` under a new single-use token, in the same commit as the token. */
  async wrap(
    response: WrappedResponse,
    ttlSeconds: number,
    creationPath: string,
    opts: WrapOptions = {},
  ): Promise<WrapInfo> {
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) {
      throw new InvalidRequest('wrapping ttl must be a positive number of seconds');
    }
    const plain = Buffer.from(JSON.stringify(response), 'utf8');
    const issued = await this.#tokens.issue(
      { id: opts.id, policies: [WRAPPING_POLICY], ttl: ttlSeconds, num_uses: 1, path: creationPath },
      ({ token, hash }) => {
        const nonce = this.#random(12);
        const record = { v: 1, nonce: nonce.toString('base64'), sealed: seal(plain, token, hash, nonce).toString('base64') };
        return [{ type: 'put', key: tokenKeys.wrap(hash), value: Buffer.from(JSON.stringify(record), 'utf8') }];
      },
    );
    const accessor = response.auth?.['accessor'];
    return {
      token: issued.token,
      accessor: issued.entry.accessor,
      ttl: issued.entry.ttl,
      creation_time: rfc3339(issued.entry.creation_time),
      creation_path: issued.entry.path,
      wrapped_accessor: typeof accessor === 'string' ? accessor : '',
    };
  }

  /**
   * The wrapped response, once: the token and the stored response are deleted in one commit.
   * Unknown, expired, already unwrapped or not a wrapping token: InvalidRequest (400, as Vault).
   */
  unwrap(token: string): Promise<WrappedResponse> {
    return this.#tokens.redeem(
      token,
      async (entry) => {
        if (!entry.policies.includes(WRAPPING_POLICY)) throw invalid();
        const raw = await this.#store.get(tokenKeys.wrap(entry.hash));
        if (raw === undefined) throw invalid();
        // The token's deletion ops already delete its wrapped response.
        return { value: open(decodeRecord(raw), token, entry.hash) };
      },
      invalid,
    );
  }

  /** Vault's `sys/wrapping/lookup`: spends nothing. */
  async lookup(token: string): Promise<WrapLookup> {
    const entry = await this.#tokens.lookup(token);
    if (entry === undefined || !entry.policies.includes(WRAPPING_POLICY)) throw invalid();
    if ((await this.#store.get(tokenKeys.wrap(entry.hash))) === undefined) throw invalid();
    return { creation_path: entry.path, creation_time: rfc3339(entry.creation_time), creation_ttl: entry.ttl };
  }
}

function keyFor(token: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(token, 'utf8'), Buffer.alloc(0), KEY_INFO, 32));
}

/** AES-256-GCM; the token hash is the associated data, binding the record to its key. */
function seal(plain: Buffer, token: string, hash: string, nonce: Buffer): Buffer {
  const cipher = createCipheriv('aes-256-gcm', keyFor(token), nonce);
  cipher.setAAD(Buffer.from(hash, 'utf8'));
  return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function open(record: z.infer<typeof recordSchema>, token: string, hash: string): WrappedResponse {
  const sealed = Buffer.from(record.sealed, 'base64');
  if (sealed.length < 16) throw new Internal('stored wrapped response is truncated');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(token), Buffer.from(record.nonce, 'base64'));
  decipher.setAAD(Buffer.from(hash, 'utf8'));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  let plain: Buffer;
  try {
    plain = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
  } catch (e) {
    throw new Internal('stored wrapped response does not authenticate', { cause: e });
  }
  const parsed = responseSchema.safeParse(JSON.parse(plain.toString('utf8')));
  if (!parsed.success) throw new Internal('stored wrapped response has the wrong shape', { cause: parsed.error });
  return parsed.data;
}

function decodeRecord(raw: Buffer): z.infer<typeof recordSchema> {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new Internal('stored wrapped response is not JSON', { cause: e });
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) throw new Internal('stored wrapped response has the wrong shape', { cause: parsed.error });
  return parsed.data;
}
