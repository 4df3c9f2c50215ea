/**
 * Key management (Vault's path_keys.go, path_keys_config.go, path_rotate.go, path_trim.go,
 * path_export.go): create, read, list, delete, config, rotate, trim, export. Every change is one
 * commit of the key's record; on a performance secondary it is forwarded (a replicated write).
 *
 *   await createKey(store, 'app', { type: 'chacha20-poly1305' }, deps);
 *   await rotateKey(store, 'app', deps);
 */
import { InvalidRequest, NotFound } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { deriveEd25519, exportAsymmetric, type AsymmetricType } from './asymmetric.js';
import { newMaterial, type CryptDeps } from './crypt-paths.js';
import { fromBackup, toBackup } from './backup.js';
import { boolField, durationField, intField, stringField } from './fields.js';
import { changePolicy, deletePolicy, listPolicies, loadPolicy } from './keys-store.js';
import { checkNewPolicy, configure, isAsymmetric, keyTypeOf, materialOf, newPolicy, versionOf, policyView, rotate, supports, trim, type ConfigInput, type KeyPolicy, type KeyVersion } from './policy.js';

type Data = Readonly<Record<string, unknown>>;

export async function listKeys(store: Store): Promise<LogicalResponse> {
  return { data: { keys: await listPolicies(store) } };
}

export async function createKey(store: Store, name: string, data: Data, deps: CryptDeps): Promise<LogicalResponse> {
  const type = keyTypeOf(stringField(data, 'type', 'aes256-gcm96'));
  const input = {
    name,
    type,
    derived: boolField(data, 'derived') === true,
    convergent: boolField(data, 'convergent_encryption') === true,
    exportable: boolField(data, 'exportable') === true,
    allowPlaintextBackup: boolField(data, 'allow_plaintext_backup') === true,
    autoRotatePeriod: durationField(data, 'auto_rotate_period') ?? 0,
    keySize: intField(data, 'key_size'),
  };
  if (stringField(data, 'external_key_ref') !== '') throw new InvalidRequest('must provide type=external-key to use external_key_ref');
  let created = false;
  // Vault's checks come before a key pair is made for nothing.
  checkNewPolicy(input);
  const made = (await loadPolicy(store, name)) === undefined ? await newMaterial(type, deps) : undefined;
  const p = await changePolicy(store, name, async (current) => {
    if (current !== undefined) return current;
    created = true;
    return newPolicy(input, deps.now(), made ?? (await newMaterial(type, deps)));
  });
  if (p === undefined) throw new InvalidRequest('error generating key: returned policy was nil');
  return { data: policyView(p), ...(created ? {} : { warnings: [`key ${name} already existed`] }) };
}

export async function readKey(store: Store, name: string, data: Data): Promise<LogicalResponse> {
  const p = await loadPolicy(store, name);
  if (p === undefined) throw new NotFound();
  const raw = stringField(data, 'context');
  let context: Buffer | undefined;
  if (raw !== '') {
    context = Buffer.from(raw, 'base64');
    if (context.toString('base64') !== raw) throw new InvalidRequest('failed to base64-decode context');
  }
  const publicOf = context === undefined ? undefined : (v: number): string => deriveEd25519(materialOf(versionOf(p, v)), context).publicKey;
  return { data: policyView(p, publicOf) };
}

export async function deleteKey(store: Store, name: string): Promise<null> {
  await deletePolicy(store, name, (p) => {
    if (p === undefined) throw new InvalidRequest(`error deleting policy ${name}: could not delete key; not found`);
    if (!p.deletion_allowed) throw new InvalidRequest(`error deleting policy ${name}: deletion is not allowed for this key`);
  });
  return null;
}

export async function configKey(store: Store, name: string, data: Data): Promise<LogicalResponse> {
  const c: ConfigInput = {
    ...(data.min_decryption_version !== undefined ? { min_decryption_version: intField(data, 'min_decryption_version') } : {}),
    ...(data.min_encryption_version !== undefined ? { min_encryption_version: intField(data, 'min_encryption_version') } : {}),
    ...(boolField(data, 'deletion_allowed') !== undefined ? { deletion_allowed: boolField(data, 'deletion_allowed') } : {}),
    ...(boolField(data, 'exportable') !== undefined ? { exportable: boolField(data, 'exportable') } : {}),
    ...(boolField(data, 'allow_plaintext_backup') !== undefined ? { allow_plaintext_backup: boolField(data, 'allow_plaintext_backup') } : {}),
    ...(durationField(data, 'auto_rotate_period') !== undefined ? { auto_rotate_period: durationField(data, 'auto_rotate_period') } : {}),
  };
  const warnings: string[] = [];
  const p = await changePolicy(store, name, (current) => {
    if (current === undefined) throw new InvalidRequest(`no existing key named ${name} could be found`);
    const next = configure(current, c, warnings);
    return JSON.stringify(next) === JSON.stringify(current) ? current : next;
  });
  return { data: policyView(p as KeyPolicy), ...(warnings.length > 0 ? { warnings } : {}) };
}

export async function rotateKey(store: Store, name: string, deps: CryptDeps): Promise<LogicalResponse> {
  const before = await loadPolicy(store, name);
  if (before === undefined) throw new InvalidRequest('key not found');
  const material = await newMaterial(before.type, deps);
  const p = await changePolicy(store, name, (current) => {
    if (current === undefined) throw new InvalidRequest('key not found');
    return rotate(current, deps.now(), material);
  });
  return { data: policyView(p as KeyPolicy) };
}

export async function trimKey(store: Store, name: string, data: Data): Promise<LogicalResponse> {
  const min = data.min_available_version === undefined || data.min_available_version === null ? undefined : intField(data, 'min_available_version');
  const p = await changePolicy(store, name, (current) => {
    if (current === undefined) throw new InvalidRequest('invalid key name');
    return trim(current, min);
  });
  return { data: policyView(p as KeyPolicy) };
}

const EXPORT_TYPES = ['encryption-key', 'signing-key', 'hmac-key', 'public-key'];

const FORMATS = ['', 'raw', 'der', 'pem'];

function exportOne(p: KeyPolicy, v: KeyVersion, exportType: string, format: string): string {
  if (exportType === 'hmac-key' || (exportType === 'encryption-key' && !isAsymmetric(p.type))) {
    if (format === 'der' || format === 'pem') throw new InvalidRequest('unknown format for HMAC key; supported values are `` or `raw`');
    return exportType === 'hmac-key' ? (p.type === 'hmac' ? (v.key ?? '') : v.hmac_key) : (v.key ?? '');
  }
  return exportAsymmetric(p.type as AsymmetricType, materialOf(v), exportType, format);
}

/** export/<type>/<name>[/<version>]. */
export async function exportKey(store: Store, exportType: string, name: string, version: string | undefined, format: string): Promise<LogicalResponse> {
  if (!EXPORT_TYPES.includes(exportType)) throw new InvalidRequest(`invalid export type: ${exportType.slice(0, 64)}`);
  if (!FORMATS.includes(format)) throw new InvalidRequest(`invalid format: ${format.slice(0, 64)}`);
  const p = await loadPolicy(store, name);
  if (p === undefined) throw new NotFound();
  if (!p.exportable && exportType !== 'public-key') throw new InvalidRequest('private key material is not exportable');
  if (exportType === 'encryption-key' && !supports.encryption(p.type)) throw new InvalidRequest('encryption not supported for the key');
  if (exportType === 'signing-key' && !supports.signing(p.type)) throw new InvalidRequest('signing not supported for the key');
  if (exportType === 'public-key' && !isAsymmetric(p.type)) throw new InvalidRequest('public key not available for the key');
  const keys: Record<string, string> = {};
  if (version === undefined || version === '') {
    for (const [k, v] of Object.entries(p.keys)) keys[k] = exportOne(p, v, exportType, format);
  } else {
    const digits = version === 'latest' ? String(p.latest_version) : version.replace(/^v/, '');
    if (!/^\d+$/.test(digits)) throw new InvalidRequest('invalid key version');
    const n = Number(digits);
    if (n < p.min_decryption_version) throw new InvalidRequest('version for export is below minimum decryption version');
    const v = p.keys[String(n)];
    if (v === undefined) throw new InvalidRequest('version does not exist or cannot be found');
    keys[String(n)] = exportOne(p, v, exportType, format);
  }
  return { data: { name: p.name, type: p.type, keys } };
}

/** backup/<name>: Vault's blob; the backup's time and version are recorded on the key, as Vault's. */
export async function backupKey(store: Store, name: string, deps: CryptDeps): Promise<LogicalResponse> {
  let blob = '';
  await changePolicy(store, name, (current) => {
    if (current === undefined) throw new InvalidRequest(`key "${name}" not found`);
    const out = toBackup(current, deps.now());
    blob = out.blob;
    return out.policy;
  });
  return { data: { backup: blob } };
}

/** restore[/<name>]: a backup written as the key (an existing key only with `force`). */
export async function restoreKey(store: Store, name: string | undefined, data: Data, deps: CryptDeps): Promise<null> {
  const blob = stringField(data, 'backup');
  if (blob === '') throw new InvalidRequest("'backup' must be supplied");
  const force = boolField(data, 'force') === true;
  const restored = fromBackup(blob, name, deps.now());
  if (restored.name === '') throw new InvalidRequest('invalid key name');
  await changePolicy(store, restored.name, (current) => {
    if (current !== undefined && !force) throw new InvalidRequest(`key "${restored.name}" already exists`);
    return restored;
  });
  return null;
}
