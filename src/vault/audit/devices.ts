/**
 * Audit devices (Vault's vault/audit.go and audit_broker.go): the table of enabled devices, stored
 * like the mount table (one key per device, `core/audit/<uuid>` replicated to every DR and
 * performance secondary, `local/core/audit/<uuid>` for `local: true` devices, which stay on their
 * cluster), and the devices this node has open. Each device's salt is in its entry, so every node
 * of a cluster and its secondaries hash alike; its file is per node (each opens its own path under
 * its own audit directory). `load()` (unseal, reload, activation) opens what the table has and
 * closes what it no longer has.
 *
 * Fail closed, as Vault's broker: a request entry that no enabled device wrote refuses the request
 * (AuditFailed, before it runs); a response entry that none wrote is an AuditFailed saying the
 * operation was applied.
 *
 *   await audit.enable('file/', { type: 'file', options: { file_path: 'vault.log' } });
 *   await audit.logRequest(input);           // throws AuditFailed when no device wrote it
 *   audit.hash('file/', 'secret')            // 'hmac-sha256:...'
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { AuditFailed, InvalidRequest } from '../../core/errors.js';
import { SerialReload } from '../../core/serial-reload.js';
import type { Store } from '../../storage/store.js';
import { encodeEntry, entryKey, mountPath, readTable, type TableLayout } from '../keyed-table.js';
import { requestEntry, responseEntry, type AuditInput, type AuditOutcome } from './entry.js';
import { hashString } from './hash.js';
import { FileDevice, fileOptions } from './file-device.js';

const LAYOUT: TableLayout = { prefix: 'core/audit/', localPrefix: 'local/core/audit/', legacy: 'core/audit', legacyLocal: 'local/core/audit' };

export interface AuditEntry {
  readonly path: string;
  readonly type: string;
  readonly description: string;
  readonly options: Record<string, string>;
  readonly local: boolean;
  readonly uuid: string;
  readonly accessor: string;
  /** The HMAC key of the device's hashes (Vault's per-device salt). */
  readonly salt: string;
}

export interface AuditEnableInput {
  readonly type: string;
  readonly description?: string;
  readonly options?: Record<string, string>;
  readonly local?: boolean;
}

/** A device of the table as this node has it: open, or why it could not be opened here. */
interface Opened {
  readonly entry: AuditEntry;
  readonly device: FileDevice | undefined;
  readonly error: string | undefined;
}

export interface AuditDeviceOptions {
  /** Where this node's audit files may be (config `audit_dir`); undefined: stdout and discard only. */
  readonly auditDir: string | undefined;
  /** Told when a device of the table cannot be opened or written on this node (never a secret). */
  readonly warn?: (fields: Record<string, unknown>, message: string) => void;
  readonly now?: () => Date;
}

export const AUDIT_REFUSED = 'no enabled audit device could record this request, so it was refused and nothing was done';
export const AUDIT_RESPONSE_FAILED = 'the operation was applied, but no enabled audit device could record its response';

export class AuditDevices {
  private entries: AuditEntry[] = [];
  private opened = new Map<string, Opened>();

  constructor(
    private readonly store: () => Store,
    private readonly opts: AuditDeviceOptions,
  ) {}

  private readonly reload = new SerialReload(
    async () => [...(await readTable<AuditEntry>(this.store(), LAYOUT, false)).entries, ...(await readTable<AuditEntry>(this.store(), LAYOUT, true)).entries],
    (entries) => {
      this.entries = entries;
    },
  );

  /** Reads the table and opens or closes devices to match it. */
  async load(): Promise<void> {
    await this.reload.load();
    await this.sync();
  }

  /** One sync at a time: two would open a device twice. */
  private syncing: Promise<void> = Promise.resolve();

  private sync(): Promise<void> {
    const next = this.syncing.then(() => this.syncNow());
    this.syncing = next.catch(() => undefined);
    return next;
  }

  private async syncNow(): Promise<void> {
    const want = new Set(this.entries.map((e) => e.uuid));
    for (const [uuid, o] of this.opened) {
      if (!want.has(uuid)) {
        this.opened.delete(uuid);
        await o.device?.close();
      }
    }
    for (const entry of this.entries) {
      if (this.opened.has(entry.uuid)) continue;
      const o = await this.openDevice(entry);
      // enable() may have opened it meanwhile.
      if (this.opened.has(entry.uuid)) await o.device?.close();
      else this.opened.set(entry.uuid, o);
    }
  }

  private async openDevice(entry: AuditEntry): Promise<Opened> {
    try {
      return { entry, device: await FileDevice.open(fileOptions(entry.options, this.opts.auditDir)), error: undefined };
    } catch (e) {
      const error = (e as Error).message;
      this.opts.warn?.({ audit_path: entry.path, err: error }, 'audit device cannot be opened on this node; requests fail closed while no device writes');
      return { entry, device: undefined, error };
    }
  }

  list(): AuditEntry[] {
    return [...this.entries].sort((a, b) => a.path.localeCompare(b.path));
  }

  get(path: string): AuditEntry | undefined {
    const p = mountPath(path, 'audit device path');
    return this.entries.find((e) => e.path === p);
  }

  /** Whether any device is enabled: a request is then audited, or refused. */
  enabled(): boolean {
    return this.entries.length > 0;
  }

  async enable(path: string, input: AuditEnableInput): Promise<AuditEntry> {
    if (path.replace(/^\/+|\/+$/g, '') === '') throw new InvalidRequest('backend path must be specified');
    const p = mountPath(path, 'audit device path');
    if (this.entries.some((e) => e.path.startsWith(p) || p.startsWith(e.path))) throw new InvalidRequest('path already in use');
    if (input.type !== 'file') throw new InvalidRequest(`unknown backend type: ${JSON.stringify(input.type.slice(0, 64))}`);
    const options = { ...(input.options ?? {}) };
    const device = await FileDevice.open(fileOptions(options, this.opts.auditDir));
    const entry: AuditEntry = {
      path: p,
      type: input.type,
      description: input.description ?? '',
      options,
      local: input.local === true,
      uuid: randomUUID(),
      accessor: `audit_${input.type}_${randomBytes(4).toString('hex')}`,
      salt: randomUUID(),
    };
    try {
      await this.store().commit([{ type: 'put', key: entryKey(LAYOUT, entry), value: encodeEntry(entry) }]);
    } catch (e) {
      await device.close();
      throw e;
    }
    this.reload.changed();
    this.entries = [...this.entries.filter((e) => e.uuid !== entry.uuid), entry];
    // A reload that read the new key may have opened it meanwhile.
    if (this.opened.has(entry.uuid)) await device.close();
    else this.opened.set(entry.uuid, { entry, device, error: undefined });
    return entry;
  }

  /** Removes the device at `path`; false when there is none (Vault answers 204 either way). */
  async disable(path: string): Promise<boolean> {
    const entry = this.get(path);
    if (!entry) return false;
    await this.store().commit([{ type: 'del', key: entryKey(LAYOUT, entry) }]);
    this.reload.changed();
    this.entries = this.entries.filter((e) => e.uuid !== entry.uuid);
    const o = this.opened.get(entry.uuid);
    this.opened.delete(entry.uuid);
    await o?.device?.close();
    return true;
  }

  /** `sys/audit-hash`: `input` hashed with the device's salt. */
  hash(path: string, input: string): string {
    const entry = this.get(path);
    if (!entry) throw new InvalidRequest(`unknown audit backend ${JSON.stringify(mountPath(path, 'audit device path'))}`);
    return hashString(entry.salt, input);
  }

  /** Writes the request entry to every device; AuditFailed when none wrote it. */
  async logRequest(input: AuditInput, error = ''): Promise<void> {
    const now = this.now();
    const ok = await this.each((o, d) => d.write(JSON.stringify(requestEntry(input, this.format(o), now, error)) + '\n'));
    if (!ok) throw new AuditFailed(AUDIT_REFUSED);
  }

  /** Writes the response entry to every device; AuditFailed (the operation was applied) when none wrote it. */
  async logResponse(input: AuditInput, outcome: AuditOutcome): Promise<void> {
    // The request disabled the last device: nothing is left to record its response.
    if (this.entries.length === 0) return;
    const now = this.now();
    const ok = await this.each((o, d) => d.write(JSON.stringify(responseEntry(input, outcome, this.format(o), now)) + '\n'));
    if (!ok) throw new AuditFailed(AUDIT_RESPONSE_FAILED);
  }

  private now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  private format(o: Opened): { salt: string; raw: boolean; hmacAccessor: boolean } {
    const f = o.device?.options;
    return { salt: o.entry.salt, raw: f?.raw ?? false, hmacAccessor: f?.hmacAccessor ?? true };
  }

  /** Runs `write` on every open device at once; whether at least one succeeded. */
  private async each(write: (o: Opened, d: FileDevice) => Promise<void>): Promise<boolean> {
    const results = await Promise.all(
      [...this.opened.values()].map(async (o) => {
        if (!o.device) return false;
        try {
          await write(o, o.device);
          return true;
        } catch (e) {
          this.opts.warn?.({ audit_path: o.entry.path, err: (e as NodeJS.ErrnoException).code ?? (e as Error).message }, 'audit device write failed');
          return false;
        }
      }),
    );
    return results.some((r) => r);
  }

  /** SIGHUP: every device's file closed and opened again at its path (log rotation). */
  async reopen(): Promise<void> {
    for (const o of this.opened.values()) {
      if (!o.device) {
        this.opened.set(o.entry.uuid, await this.openDevice(o.entry));
        continue;
      }
      await o.device.reopen().catch((e: unknown) => this.opts.warn?.({ audit_path: o.entry.path, err: (e as Error).message }, 'audit device cannot be reopened; its writes try again'));
    }
  }

  /** Seal: every device closed (load() opens them again). */
  async close(): Promise<void> {
    const all = [...this.opened.values()];
    this.opened = new Map();
    this.entries = [];
    for (const o of all) await o.device?.close();
  }
}
