/**
 * Licensing: verify a signed license and ask it for features; make development licenses.
 *
 *   const status = await loadLicense(config.licensePath, config.licenseIssuerKeys, new Date());
 *   hasFeature(status, Feature.performanceReplication);
 */
export {
  Feature,
  InvalidReason,
  canonicalJson,
  decodeBase64Exact,
  describeLicense,
  hasFeature,
  parseIssuerKey,
  signingBytes,
  verifyLicense,
} from './license.js';
export type { LicenseDocument, LicenseInfo, LicenseStatus } from './license.js';
export { createDevLicense, signLicense } from './dev.js';
export type { DevLicense, DevLicenseOptions } from './dev.js';
export { ISSUER_KEY_FILE, LICENSE_FILE, loadLicense, writeDevLicense } from './file.js';
export type { WrittenDevLicense } from './file.js';
