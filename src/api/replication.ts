/**
 * `sys/replication/*` calls: status, reindex, Merkle check, and DR operation token generation.
 * Reindex and Merkle check go to the DR secondary endpoints when a DR operation token is given,
 * else to the local endpoints. The generation endpoints answer bare objects, not envelopes.
 *
 *   const { dr } = await client.replication.status();
 *   if (dr.mode === 'secondary') console.log(dr.last_remote_wal);
 *   const { warnings } = await client.replication.reindex({ diff: true });
 *   const { nonce, otp } = await client.replication.operationTokenStart();
 */
import type {
  Envelope,
  KindStatus,
  MerkleCheckOptions,
  MerkleCheckReport,
  ReindexOptions,
  ReplicationStatus,
} from './types.js';
import { MalformedResponse } from './errors.js';
import { GenerationApi, type GenerationAttempt } from './generation.js';
import { Method } from './request.js';
import type { ApiRequest, ApiResponse } from './request.js';

export const ReplicationKind = { dr: 'dr', performance: 'performance' } as const;
export type ReplicationKind = (typeof ReplicationKind)[keyof typeof ReplicationKind];

/** The bare object of every DR operation token generation endpoint (Vault's generate-root status). */
export type OperationTokenAttempt = GenerationAttempt;

const OPERATION_TOKEN = 'sys/replication/dr/secondary/generate-operation-token';

export class ReplicationApi {
  readonly #request: (req: ApiRequest) => Promise<ApiResponse>;
  /** The DR operation token generation: the same calls as `sys.generateRoot`, at its own path. */
  readonly #operationToken: GenerationApi;

  constructor(request: (req: ApiRequest) => Promise<ApiResponse>) {
    this.#request = request;
    this.#operationToken = new GenerationApi(request, OPERATION_TOKEN);
  }

  /** Both kinds; unauthenticated. */
  async status(): Promise<ReplicationStatus> {
    return this.#data<ReplicationStatus>({ method: Method.get, path: 'sys/replication/status' });
  }

  /** One kind's block (`sys/replication/{kind}/status`). */
  async kindStatus(kind: ReplicationKind): Promise<KindStatus> {
    return this.#data<KindStatus>({ method: Method.get, path: `sys/replication/${kind}/status` });
  }

  /** Rebuilds the Merkle index from stored data; resolves when the node has finished. */
  async reindex(options: ReindexOptions = {}): Promise<{ warnings: string[] }> {
    const dr = options.drOperationToken !== undefined;
    const res = await this.#request({
      method: Method.post,
      path: dr ? 'sys/replication/dr/secondary/reindex' : 'sys/replication/reindex',
      body: {
        diff: options.diff ?? false,
        force: options.force ?? false,
        skip_flush: options.skipFlush ?? false,
        ...(dr ? { dr_operation_token: options.drOperationToken } : {}),
      },
    });
    return { warnings: (res.body as Envelope | null)?.warnings ?? [] };
  }

  /** Recomputes the Merkle index from storage and reports the mismatches. */
  async merkleCheck(options: MerkleCheckOptions = {}): Promise<MerkleCheckReport> {
    const dr = options.drOperationToken !== undefined;
    return this.#data<MerkleCheckReport>({
      method: Method.post,
      path: dr ? 'sys/replication/dr/secondary/merkle-check' : 'sys/replication/merkle-check',
      body: dr ? { dr_operation_token: options.drOperationToken } : {},
    });
  }

  /** The DR operation token generation attempt in progress, if any (`started`). */
  async operationTokenStatus(): Promise<OperationTokenAttempt> {
    return this.#operationToken.status();
  }

  /** Starts an attempt; with neither option the node generates the OTP and returns it in `otp`. */
  async operationTokenStart(options: { otp?: string; pgpKey?: string } = {}): Promise<OperationTokenAttempt> {
    return this.#operationToken.start(options);
  }

  async operationTokenCancel(): Promise<void> {
    await this.#operationToken.cancel();
  }

  /** Provides one root key share (hex or base64) for the attempt named by `nonce`. */
  async operationTokenUpdate(key: string, nonce: string): Promise<OperationTokenAttempt> {
    return this.#operationToken.update(key, nonce);
  }

  /** Revokes a DR operation token. */
  async operationTokenDelete(drOperationToken: string): Promise<void> {
    await this.#request({
      method: Method.post,
      path: 'sys/replication/dr/secondary/operation-token/delete',
      body: { dr_operation_token: drOperationToken },
    });
  }

  async #data<D>(req: ApiRequest): Promise<D> {
    const res = await this.#request(req);
    const data = (res.body as Envelope<D> | null)?.data;
    if (data === null || data === undefined) {
      throw new MalformedResponse(req.path, res.status, 'the envelope has no data');
    }
    return data;
  }
}
