/**
 * The barrier keys: `sys/rotate`, `sys/key-status` and Vault's `sys/rekey/*` (bare objects; the
 * rekey endpoints need no token, the shares authorize them).
 *
 *   await client.sys.keys.rotate();
 *   const { term } = await client.sys.keys.status();
 *   const { nonce } = await client.sys.keys.rekeyStart({ secret_shares: 5, secret_threshold: 3 });
 *   const done = await client.sys.keys.rekeyUpdate(share, nonce);   // ... until done.complete
 */
import { Method } from './request.js';
import type { ApiRequest, ApiResponse } from './request.js';

export interface KeyStatus {
  readonly term: number;
  readonly install_time: string;
  readonly encryptions: number;
}

export interface RekeyStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly t: number;
  readonly n: number;
  readonly progress: number;
  readonly required: number;
  readonly pgp_fingerprints: string[] | null;
  readonly backup: boolean;
  readonly verification_required: boolean;
  readonly verification_nonce?: string;
}

/** An update's answer: the status, or once complete the new shares. */
export interface RekeyUpdate extends Partial<RekeyStatus> {
  readonly complete?: boolean;
  readonly keys?: string[];
  readonly keys_base64?: string[];
}

export interface RekeyVerifyStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly t: number;
  readonly n: number;
  readonly progress: number;
  readonly complete?: boolean;
}

export interface RekeyStart {
  readonly secret_shares: number;
  readonly secret_threshold: number;
  readonly pgp_keys?: string[];
  readonly backup?: boolean;
  readonly require_verification?: boolean;
}

export class KeysApi {
  readonly #request: (req: ApiRequest) => Promise<ApiResponse>;

  constructor(request: (req: ApiRequest) => Promise<ApiResponse>) {
    this.#request = request;
  }

  async rotate(): Promise<void> {
    await this.#request({ method: Method.put, path: 'sys/rotate', body: {} });
  }

  async status(): Promise<KeyStatus> {
    const body = (await this.#request({ method: Method.get, path: 'sys/key-status' })).body as { data: KeyStatus };
    return body.data;
  }

  async rekeyStatus(): Promise<RekeyStatus> {
    return (await this.#request({ method: Method.get, path: 'sys/rekey/init' })).body as RekeyStatus;
  }

  async rekeyStart(body: RekeyStart): Promise<RekeyStatus> {
    return (await this.#request({ method: Method.put, path: 'sys/rekey/init', body })).body as RekeyStatus;
  }

  async rekeyCancel(): Promise<void> {
    await this.#request({ method: Method.delete, path: 'sys/rekey/init' });
  }

  async rekeyUpdate(key: string, nonce: string): Promise<RekeyUpdate> {
    return (await this.#request({ method: Method.put, path: 'sys/rekey/update', body: { key, nonce } })).body as RekeyUpdate;
  }

  async verifyStatus(): Promise<RekeyVerifyStatus> {
    return (await this.#request({ method: Method.get, path: 'sys/rekey/verify' })).body as RekeyVerifyStatus;
  }

  async verifyCancel(): Promise<RekeyVerifyStatus> {
    return (await this.#request({ method: Method.delete, path: 'sys/rekey/verify' })).body as RekeyVerifyStatus;
  }

  async verifyUpdate(key: string, nonce: string): Promise<RekeyVerifyStatus> {
    return (await this.#request({ method: Method.put, path: 'sys/rekey/verify', body: { key, nonce } })).body as RekeyVerifyStatus;
  }
}
