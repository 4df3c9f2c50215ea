/**
 * A token generation from root key shares, in the wire of Vault's `sys/generate-root` (bare
 * objects, no envelope; WIRE.md sections 5 and 8): `sys/generate-root` for root tokens.
 *
 *   const { nonce, otp } = await client.sys.generateRoot.start();      // the node generates the OTP
 *   const done = await client.sys.generateRoot.update(share, nonce);   // ... until done.complete
 */
import { MalformedResponse } from './errors.js';
import { Method } from './request.js';
import type { ApiRequest, ApiResponse } from './request.js';

/** The bare object every generation endpoint answers (Vault's GenerateRootStatusResponse). */
export interface GenerationAttempt {
  readonly nonce: string;
  readonly started: boolean;
  readonly progress: number;
  readonly required: number;
  readonly complete: boolean;
  readonly encoded_token: string;
  readonly encoded_root_token?: string;
  readonly pgp_fingerprint: string;
  /** Set only in the answer to a start that had the node generate the OTP. */
  readonly otp: string;
  readonly otp_length: number;
}

export class GenerationApi {
  readonly #request: (req: ApiRequest) => Promise<ApiResponse>;
  readonly #base: string;

  /** `base` is the path before `/attempt` and `/update`, e.g. `sys/generate-root`. */
  constructor(request: (req: ApiRequest) => Promise<ApiResponse>, base: string) {
    this.#request = request;
    this.#base = base;
  }

  /** The attempt in progress, if any (`started`). */
  async status(): Promise<GenerationAttempt> {
    return this.#bare({ method: Method.get, path: `${this.#base}/attempt` });
  }

  /** Starts an attempt; with neither option the node generates the OTP and returns it in `otp`. */
  async start(options: { otp?: string; pgpKey?: string } = {}): Promise<GenerationAttempt> {
    return this.#bare({ method: Method.put, path: `${this.#base}/attempt`, body: { otp: options.otp ?? '', pgp_key: options.pgpKey ?? '' } });
  }

  async cancel(): Promise<void> {
    await this.#request({ method: Method.delete, path: `${this.#base}/attempt` });
  }

  /** Provides one root key share (hex or base64) for the attempt named by `nonce`. */
  async update(key: string, nonce: string): Promise<GenerationAttempt> {
    return this.#bare({ method: Method.put, path: `${this.#base}/update`, body: { key, nonce } });
  }

  async #bare(req: ApiRequest): Promise<GenerationAttempt> {
    const res = await this.#request(req);
    if (res.body === null || typeof res.body !== 'object' || Array.isArray(res.body)) {
      throw new MalformedResponse(req.path, res.status, 'expected a JSON object');
    }
    return res.body as GenerationAttempt;
  }
}
