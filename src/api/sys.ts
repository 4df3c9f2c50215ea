/**
 * `sys/*` calls for node lifecycle: init, unseal, seal, seal status, health, HA (leader, ha-status,
 * step-down), mounts, generate-root. These
 * endpoints answer bare objects rather than envelopes (WIRE.md section 7).
 *
 *   const { keys, root_token } = await client.sys.init({ secret_shares: 1, secret_threshold: 1 });
 *   const status = await client.sys.unseal({ key: keys[0]! });
 */
import type {
  Envelope,
  HaStatus,
  HealthQuery,
  HealthResponse,
  InitRequest,
  InitResponse,
  LeaderResponse,
  MountEntry,
  AuditDevice,
  SealStatus,
  UnsealRequest,
} from './types.js';
import { GenerationApi } from './generation.js';
import { KeysApi } from './keys.js';
import { Method } from './request.js';
import type { ApiRequest, ApiResponse } from './request.js';

/** Every status `sys/health` uses to describe the node rather than to report an error. */
const healthStatuses = [200, 429, 472, 473, 501, 503] as const;

export class SysApi {
  readonly #request: (req: ApiRequest) => Promise<ApiResponse>;
  /** `sys/generate-root`: a new root token from the unseal key shares. */
  readonly generateRoot: GenerationApi;
  /** `sys/rotate`, `sys/key-status`, `sys/rekey/*`. */
  readonly keys: KeysApi;

  constructor(request: (req: ApiRequest) => Promise<ApiResponse>) {
    this.#request = request;
    this.generateRoot = new GenerationApi(request, 'sys/generate-root');
    this.keys = new KeysApi(request);
  }

  async init(body: InitRequest): Promise<InitResponse> {
    return (await this.#request({ method: Method.post, path: 'sys/init', body })).body as InitResponse;
  }

  async unseal(body: UnsealRequest): Promise<SealStatus> {
    return (await this.#request({ method: Method.post, path: 'sys/unseal', body })).body as SealStatus;
  }

  async seal(): Promise<void> {
    await this.#request({ method: Method.post, path: 'sys/seal', body: {} });
  }

  async sealStatus(): Promise<SealStatus> {
    return (await this.#request({ method: Method.get, path: 'sys/seal-status' })).body as SealStatus;
  }

  /**
   * The health body whatever the status, including statuses chosen through the override
   * parameters; `status` is returned alongside because it is the answer's main fact.
   */
  async health(query: HealthQuery = {}): Promise<HealthResponse & { readonly status: number }> {
    const overrides = Object.entries(query)
      .filter(([key, value]) => key.endsWith('code') && typeof value === 'number')
      .map(([, value]) => value as number);
    const res = await this.#request({
      method: Method.get,
      path: 'sys/health',
      query: { ...query },
      accept: [...healthStatuses, ...overrides],
    });
    return { ...(res.body as HealthResponse), status: res.status };
  }

  /** `sys/leader`: this node's view of HA (answers sealed too, without a token). */
  async leader(): Promise<LeaderResponse> {
    return (await this.#request({ method: Method.get, path: 'sys/leader' })).body as LeaderResponse;
  }

  /**
   * `sys/ha-status`: every node of the HA cluster. The list is read at the top level (where Vault's
   * Go client reads it) and, failing that, from the envelope's `data`.
   */
  async haStatus(): Promise<HaStatus> {
    const body = (await this.#request({ method: Method.get, path: 'sys/ha-status' })).body as { nodes?: HaStatus['nodes']; data?: { nodes?: HaStatus['nodes'] } | null } | null;
    return { nodes: body?.nodes ?? body?.data?.nodes ?? [] };
  }

  /** `sys/step-down`: the active node gives up its role (sudo; a standby relays it to the active node). */
  async stepDown(): Promise<void> {
    await this.#request({ method: Method.put, path: 'sys/step-down', body: {} });
  }

  /** Mount table keyed by path with a trailing slash ("secret/"). */
  async mounts(): Promise<Record<string, MountEntry>> {
    const res = await this.#request({ method: Method.get, path: 'sys/mounts' });
    return (res.body as Envelope<Record<string, MountEntry>> | null)?.data ?? {};
  }

  /** `sys/audit`: the enabled audit devices keyed by path ("file/"); sudo. */
  async auditDevices(): Promise<Record<string, AuditDevice>> {
    const res = await this.#request({ method: Method.get, path: 'sys/audit' });
    return (res.body as Envelope<Record<string, AuditDevice>> | null)?.data ?? {};
  }

  /** `sys/audit/<path>`: enables an audit device (sudo). */
  async enableAudit(path: string, device: { type: string; description?: string; local?: boolean; options?: Record<string, string> }): Promise<void> {
    await this.#request({ method: Method.put, path: `sys/audit/${path}`, body: device });
  }

  /** `sys/audit/<path>` DELETE: disables the device there, if there is one (sudo). */
  async disableAudit(path: string): Promise<void> {
    await this.#request({ method: Method.delete, path: `sys/audit/${path}` });
  }
}
