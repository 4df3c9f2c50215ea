/**
 * A primary's own credentials: its replication CA, the cluster port's server certificate and the
 * key that signs activation tokens. Making them costs tens of milliseconds (key generation and
 * X.509 signing, cold code on a node that never was a primary), which a promotion would otherwise
 * pay while its cluster accepts no writes. So a secondary makes them ahead, in the background, for
 * the cluster it would be promoted in, and the promotion takes them ready-made.
 *
 *   const spare = new SpareMaterial();
 *   spare.prepare(clusterId, now);            // a secondary of clusterId: make them now
 *   const m = await spare.take(clusterId, now); // promote: the spare, or fresh ones
 *
 * The spare lives in memory only, until taken: nothing is persisted that a promotion did not
 * choose, and a failed background attempt only means the promotion makes its own.
 */
import { createSigningKey } from './activation-token.js';
import { createCa, issueLeaf } from './pki.js';
import type { PrimaryMaterial } from './role-record.js';

/** What a new primary starts with: its credentials, and no secondaries yet. */
export type FreshMaterial = Omit<PrimaryMaterial, 'certs' | 'wrapAccessors'>;

export async function newPrimaryMaterial(clusterId: string, now: number): Promise<FreshMaterial> {
  const ca = await createCa({ clusterId, now });
  const serverName = `primary.${clusterId}.tessera`;
  const leaf = await issueLeaf(ca, { name: serverName, usage: 'server', ttlDays: 3650, now });
  const signing = await createSigningKey();
  return {
    caCertPem: ca.certPem,
    caKeyPem: ca.keyPem,
    serverCertPem: leaf.certPem,
    serverKeyPem: leaf.keyPem,
    serverName,
    signing: { privateJwk: signing.privateJwk, publicJwk: signing.publicJwk },
  };
}

export class SpareMaterial {
  private spare: { readonly clusterId: string; readonly material: Promise<FreshMaterial | undefined> } | undefined;

  /** Starts making material for `clusterId` unless it is already made or under way. */
  prepare(clusterId: string, now: number): void {
    if (this.spare?.clusterId === clusterId) return;
    this.spare = { clusterId, material: newPrimaryMaterial(clusterId, now).catch(() => undefined) };
  }

  /** The spare for `clusterId` (used once), or fresh material when there is none. */
  async take(clusterId: string, now: number): Promise<FreshMaterial> {
    const spare = this.spare;
    this.spare = undefined;
    const ready = spare?.clusterId === clusterId ? await spare.material : undefined;
    return ready ?? newPrimaryMaterial(clusterId, now);
  }

  /** Whether a spare for `clusterId` has been asked for (tests). */
  has(clusterId: string): boolean {
    return this.spare?.clusterId === clusterId;
  }
}
