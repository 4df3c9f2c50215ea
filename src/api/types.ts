/**
 * The wire shapes of WIRE.md that the client reads and writes. Field names are the wire's own
 * (snake_case) so a body can be printed or compared without a mapping step.
 *
 *   const env: Envelope<{ keys: string[] }> | null = await client.list('secret/metadata');
 */

/** A path's help (GET ?help=1): Vault's api `Help` struct; `vault path-help` prints `help`. */
export interface Help {
  readonly help: string;
  readonly see_also: string[] | null;
  readonly openapi: Record<string, unknown> | null;
}

/** The success envelope; keys are always present and empty ones are null (WIRE.md section 2). */
export interface Envelope<D = Record<string, unknown>> {
  readonly request_id: string;
  readonly lease_id: string;
  readonly renewable: boolean;
  readonly lease_duration: number;
  readonly data: D | null;
  readonly wrap_info: WrapInfo | null;
  readonly warnings: string[] | null;
  readonly auth: Auth | null;
  readonly mount_type?: string;
}

export interface WrapInfo {
  readonly token: string;
  readonly accessor: string;
  /** Seconds. */
  readonly ttl: number;
  /** RFC 3339. */
  readonly creation_time: string;
  readonly creation_path: string;
  readonly wrapped_accessor: string;
}

export interface Auth {
  readonly client_token: string;
  readonly accessor: string;
  readonly policies: string[] | null;
  readonly lease_duration: number;
  readonly renewable: boolean;
  readonly [extra: string]: unknown;
}

/** The body of every non-2xx answer. */
export interface ErrorBody {
  readonly errors: string[];
}

/** Query values; undefined entries are left out of the URL. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

// --- sys ---------------------------------------------------------------------------------------

export interface InitRequest {
  readonly secret_shares: number;
  readonly secret_threshold: number;
}

/** `sys/init` answers a bare object. */
export interface InitResponse {
  readonly keys: string[];
  readonly keys_base64: string[];
  readonly root_token: string;
}

/** `sys/seal-status` and `sys/unseal` answer this bare object. */
export interface SealStatus {
  readonly type: string;
  readonly initialized: boolean;
  readonly sealed: boolean;
  /** Threshold. */
  readonly t: number;
  /** Shares. */
  readonly n: number;
  readonly progress: number;
  readonly nonce: string;
  readonly version: string;
  readonly cluster_name?: string;
  readonly cluster_id?: string;
}

/** `sys/unseal` takes a key share, or `reset` to discard the shares given so far. */
export type UnsealRequest = { readonly key: string } | { readonly reset: true };

/** `sys/health` answers this for every one of its status codes (200, 429, 472, 473, 501, 503). */
export interface HealthResponse {
  readonly initialized: boolean;
  readonly sealed: boolean;
  readonly standby: boolean;
  readonly replication_dr_mode: string;
  readonly replication_performance_mode: string;
  readonly version: string;
  readonly cluster_id?: string;
  readonly cluster_name?: string;
  readonly server_time_utc: number;
  readonly [extra: string]: unknown;
}

/** Overrides of the status code `sys/health` answers with. */
export interface HealthQuery {
  readonly standbyok?: boolean;
  readonly perfstandbyok?: boolean;
  readonly activecode?: number;
  readonly standbycode?: number;
  readonly drsecondarycode?: number;
  readonly performancestandbycode?: number;
  readonly sealedcode?: number;
  readonly uninitcode?: number;
}

/** `sys/leader` answers this bare object, sealed or not, without a token. */
export interface LeaderResponse {
  readonly ha_enabled: boolean;
  /** True on the active node. */
  readonly is_self: boolean;
  /** RFC 3339; Vault's zero time ("0001-01-01T00:00:00Z") unless this node is active. */
  readonly active_time: string;
  /** The active node's API address; empty when none is known. */
  readonly leader_address: string;
  readonly leader_cluster_address: string;
  readonly performance_standby: boolean;
  readonly performance_standby_last_remote_wal: number;
  readonly last_wal?: number;
  readonly [extra: string]: unknown;
}

/** One node of the cluster in `sys/ha-status` (Vault's field names). */
export interface HaNode {
  readonly hostname: string;
  readonly api_address: string;
  readonly cluster_address: string;
  readonly active_node: boolean;
  /** RFC 3339; null for the active node. */
  readonly last_echo: string | null;
  readonly version: string;
  /** Vault's fields (absent from older nodes): the node's version, '' unless configured, and Vault's echo measurements (ms). */
  readonly upgrade_version?: string;
  readonly redundancy_zone?: string;
  readonly echo_duration_ms?: number;
  readonly clock_skew_ms?: number;
  readonly replication_primary_canary_age_ms?: number;
  readonly [extra: string]: unknown;
}

/** `sys/ha-status`: every node that echoed recently, the active one included. */
export interface HaStatus {
  readonly nodes: HaNode[];
}

// --- replication -------------------------------------------------------------------------------

export const ReplicationMode = {
  disabled: 'disabled',
  primary: 'primary',
  secondary: 'secondary',
  bootstrapping: 'bootstrapping',
  unknown: 'unknown',
} as const;
export type ReplicationMode = (typeof ReplicationMode)[keyof typeof ReplicationMode];

/** Fields both roles report. Epochs are unix seconds as strings ("0" when never). */
interface ActiveStatusCommon {
  readonly cluster_id: string;
  readonly state: string;
  readonly merkle_root: string;
  readonly corrupted_merkle_tree: boolean;
  readonly last_reindex_epoch: string;
  readonly last_corruption_check_epoch: string;
  readonly primary_cluster_addr?: string;
  /** Present while a reindex runs. */
  readonly reindex_in_progress?: boolean;
  readonly reindex_building_progress?: number;
  readonly reindex_building_total?: number;
  readonly [extra: string]: unknown;
}

export interface PeerSecondary {
  readonly node_id: string;
  /** Vault's fields: what the primary observed (the peer address of the secondary's latest call; no API address). */
  readonly api_address: string;
  readonly cluster_address: string;
  /** What the secondary says about itself (Tessera's addition): a claim, not checked. */
  readonly reported_api_address?: string;
  readonly reported_cluster_address?: string;
  readonly connection_status: 'connected' | 'disconnected';
  readonly last_heartbeat: string;
  readonly last_heartbeat_duration_ms: string;
  readonly clock_skew_ms: string;
  readonly replication_primary_canary_age_ms: string;
}

export type PeerPrimary = Omit<PeerSecondary, 'node_id'>;

export interface PrimaryStatus extends ActiveStatusCommon {
  readonly mode: 'primary';
  readonly known_secondaries: string[];
  readonly last_wal: number;
  readonly last_dr_wal?: number;
  readonly last_performance_wal?: number;
  readonly secondaries: PeerSecondary[];
}

export interface SecondaryStatus extends ActiveStatusCommon {
  readonly mode: 'secondary';
  readonly secondary_id: string;
  readonly last_remote_wal: number;
  readonly known_primary_cluster_addrs: string[];
  readonly connection_state: 'ready' | 'connecting' | 'transient_failure' | 'idle' | 'shutdown';
  readonly last_start: string;
  readonly primaries: PeerPrimary[];
  readonly merkle_sync_progress?: { readonly sync_total_keys: number; readonly sync_progress: number };
}

export interface DisabledStatus {
  readonly mode: 'disabled';
}

/** A node between roles; its other fields are not fixed by the wire. */
export interface TransitionalStatus {
  readonly mode: 'bootstrapping' | 'unknown';
  readonly [extra: string]: unknown;
}

export type KindStatus = PrimaryStatus | SecondaryStatus | DisabledStatus | TransitionalStatus;

/** `data` of `sys/replication/status`. */
export interface ReplicationStatus {
  readonly dr: KindStatus;
  readonly performance: KindStatus;
  /** Some nodes report reindex progress at the top level instead of per kind. */
  readonly reindex_building_progress?: number;
  readonly reindex_building_total?: number;
  readonly [extra: string]: unknown;
}

export interface ReindexOptions {
  readonly diff?: boolean;
  readonly force?: boolean;
  readonly skipFlush?: boolean;
  /** When given, the DR secondary endpoint is used (it authorises with this token). */
  readonly drOperationToken?: string;
}

export interface MerkleCheckOptions {
  /** When given, the DR secondary endpoint is used (it authorises with this token). */
  readonly drOperationToken?: string;
}

export interface CorruptedPage {
  readonly corrupted: boolean;
  readonly subpages: number[];
}

export interface MerkleSubtreeReport {
  readonly tree_type: 'replicated' | 'local';
  /** Base64. */
  readonly root_hash: string;
  readonly corrupted_subtree_root: boolean;
  readonly corrupted_index_tuples_map: Readonly<Record<string, CorruptedPage>> | null;
}

/** `data` of a Merkle check. Subtree "1" is replicated data, "2" is local data. */
export interface MerkleCheckReport {
  readonly merkle_corruption_report: {
    readonly corrupted_root: boolean;
    /** RFC 3339. */
    readonly last_corruption_check_epoch: string;
    readonly corrupted_tree_map: Readonly<Record<string, MerkleSubtreeReport>>;
  };
}

// --- mounts ------------------------------------------------------------------------------------

/** One entry of `sys/mounts`, keyed by its path with a trailing slash ("secret/"). */
/** An audit device as `sys/audit` lists it. */
export interface AuditDevice {
  readonly type: string;
  readonly description: string;
  readonly options: Readonly<Record<string, string>>;
  readonly local: boolean;
  readonly path: string;
}

export interface MountEntry {
  readonly type: string;
  readonly description?: string;
  readonly local?: boolean;
  readonly options: Readonly<Record<string, string>> | null;
  readonly [extra: string]: unknown;
}
