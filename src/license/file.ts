/**
 * License files on disk: read and verify the configured license, or write a development one.
 *
 *   const { licensePath, issuerPublicKey } = await writeDevLicense(dataDir);
 *   const status = await loadLicense(licensePath, [issuerPublicKey], new Date());
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createDevLicense } from './dev.js';
import type { DevLicenseOptions } from './dev.js';
import { InvalidReason, verifyLicense } from './license.js';
import type { LicenseStatus } from './license.js';

export const LICENSE_FILE = 'license.json';
export const ISSUER_KEY_FILE = 'issuer.pub';

/** Reads and verifies `path`; no path or an unreadable file is a `missing` license, not a throw. */
export async function loadLicense(
  path: string | undefined,
  issuerKeysB64: readonly string[],
  now: Date,
): Promise<LicenseStatus> {
  if (path === undefined || path === '') {
    return { valid: false, reason: InvalidReason.missing, detail: 'no license_path is configured' };
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
    return { valid: false, reason: InvalidReason.missing, detail: `cannot read license file ${path} (${code})` };
  }
  return verifyLicense(text, issuerKeysB64, now);
}

export interface WrittenDevLicense {
  readonly licensePath: string;
  /** Holds the base64 public key and a newline. */
  readonly issuerPubPath: string;
  readonly issuerPublicKey: string;
}

/**
 * Creates `dir` (with parents) and writes DIR/license.json and DIR/issuer.pub, replacing any that
 * exist. The issuer's secret key is discarded.
 */
export async function writeDevLicense(
  dir: string,
  opts: Partial<DevLicenseOptions> = {},
): Promise<WrittenDevLicense> {
  const dev = createDevLicense({ ...opts, now: opts.now ?? new Date() });
  await mkdir(dir, { recursive: true });
  const licensePath = join(dir, LICENSE_FILE);
  const issuerPubPath = join(dir, ISSUER_KEY_FILE);
  await writeFile(licensePath, dev.licenseText, { mode: 0o644 });
  await writeFile(issuerPubPath, `${dev.issuerPublicKey}\n`, { mode: 0o644 });
  return { licensePath, issuerPubPath, issuerPublicKey: dev.issuerPublicKey };
}
