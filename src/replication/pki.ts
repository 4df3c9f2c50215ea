/**
 * The replication PKI: one ECDSA P-256 CA per cluster (created by `primary/enable`), and leaf
 * certificates for the mTLS channel on the cluster port. A leaf's DNS SAN (also its CN) is the
 * identity the primary authorises: the secondary id for clients, `primary.<clusterId>` for the
 * primary's server certificate.
 *
 *   const ca = await createCa({ clusterId, now: Date.now() });
 *   const server = await issueLeaf(ca, { name: `primary.${clusterId}`, usage: 'server', ttlDays: 3650, now });
 *   const client = await issueLeaf(ca, { name: 'dr-east', usage: 'client', ttlDays: 3650, now });
 *   nameOf(client.certPem) === 'dr-east'; fingerprintOf(client.certPem) === client.fingerprint;
 *   identityOf(peerCert.subjectaltname, peerCert.subject.CN) === 'dr-east'; // a TLS peer's, already parsed
 */
import { X509Certificate, createHash, randomBytes, webcrypto } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import { lazy } from '../core/lazy.js';

export interface CaMaterial {
  readonly certPem: string;
  /** PKCS#8 PEM. */
  readonly keyPem: string;
}

export interface LeafMaterial {
  readonly certPem: string;
  /** PKCS#8 PEM. */
  readonly keyPem: string;
  /** SHA-256 of the DER certificate, lower-case hex: what `Peer.fingerprint` carries. */
  readonly fingerprint: string;
  /** Hex serial number. */
  readonly serial: string;
}

export type LeafUsage = 'server' | 'client';

const crypto = webcrypto;

/**
 * @peculiar/x509, and the reflect polyfill it needs first, loaded when the first certificate is
 * made: about 170 modules and 0.2 s of CPU that a node start does not pay until it needs them.
 */
const loadX509 = lazy(async () => {
  await import('reflect-metadata');
  return import('@peculiar/x509');
});
const EC_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
/** Leaves start slightly in the past so a peer whose clock runs a little behind accepts them. */
const BACKDATE_MS = 5 * 60_000;
const CA_TTL_DAYS = 3650;
/**
 * Ids become DNS SANs: letters, digits, '_', '.', '-' (underscore too, since Vault ids often carry
 * one; only the server name is ever checked as a hostname, and that one is `primary.<clusterId>`).
 */
const DNS_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$/;

/** Creates the self-signed replication CA of a cluster. */
export async function createCa(opts: { clusterId: string; now: number; ttlDays?: number }): Promise<CaMaterial> {
  const x509 = await loadX509();
  const keys = await generateKeys();
  const notBefore = new Date(opts.now - BACKDATE_MS);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: newSerial(),
      name: [{ CN: [`tessera replication CA ${opts.clusterId}`] }, { O: ['tessera'] }],
      notBefore,
      notAfter: new Date(opts.now + (opts.ttlDays ?? CA_TTL_DAYS) * DAY_MS),
      keys,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem'), keyPem: await exportKey(keys.privateKey) };
}

/** Issues a leaf signed by `ca` whose DNS SAN and CN are `name`. */
export async function issueLeaf(
  ca: CaMaterial,
  opts: { name: string; usage: LeafUsage; ttlDays: number; now: number },
): Promise<LeafMaterial> {
  if (!DNS_NAME.test(opts.name)) throw new InvalidRequest(`"${opts.name}" is not usable as a certificate DNS name`);
  if (!(opts.ttlDays > 0)) throw new InvalidRequest('ttlDays must be positive');
  const x509 = await loadX509();
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await crypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(ca.keyPem), EC_KEY, false, ['sign']);
  const keys = await generateKeys();
  const serial = newSerial();
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serial,
      subject: [{ CN: [opts.name] }],
      issuer: caCert.subjectName,
      notBefore: new Date(opts.now - BACKDATE_MS),
      notAfter: new Date(opts.now + opts.ttlDays * DAY_MS),
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension(
          [opts.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
          false,
        ),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: opts.name }], false),
        await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return {
    certPem: cert.toString('pem'),
    keyPem: await exportKey(keys.privateKey),
    fingerprint: sha256Hex(cert.rawData),
    serial,
  };
}

/** SHA-256 of the DER certificate, lower-case hex. Accepts PEM or DER. */
export function fingerprintOf(cert: string | Uint8Array): string {
  return sha256Hex(typeof cert === 'string' ? new X509Certificate(cert).raw : cert);
}

/** The certificate's first DNS SAN (its identity), else its CN; InvalidRequest when it has neither. */
export function nameOf(cert: string | Uint8Array): string {
  const parsed = new X509Certificate(typeof cert === 'string' ? cert : Buffer.from(cert));
  return identityOf(parsed.subjectAltName, /^CN=(.*)$/m.exec(parsed.subject)?.[1]);
}

/**
 * The identity in node's parsed form of a certificate (`X509Certificate.subjectAltName`, or a TLS
 * socket's `PeerCertificate.subjectaltname` and `subject.CN`): the first DNS SAN, else the CN.
 * Node writes SAN values with special characters as JSON strings; those are unquoted here.
 */
export function identityOf(subjectAltName: string | undefined, commonName: string | undefined): string {
  for (const m of (subjectAltName ?? '').matchAll(/(?:^|, )([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    const value = m[2] ?? '';
    if (m[1] === 'DNS' && value) return value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  if (commonName) return commonName;
  throw new InvalidRequest('certificate names no DNS SAN or CN');
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return crypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify']);
}

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  const x509 = await loadX509();
  return x509.PemConverter.encode(await crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** 16 random bytes, first byte in 0x40..0x7f: a positive, minimally encoded DER INTEGER. */
function newSerial(): string {
  const b = randomBytes(16);
  b[0] = ((b[0] ?? 0) & 0x3f) | 0x40;
  return b.toString('hex');
}

function sha256Hex(data: ArrayBuffer | Uint8Array): string {
  return createHash('sha256').update(new Uint8Array(data)).digest('hex');
}
