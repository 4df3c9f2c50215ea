/** The seal status table shared by `status` and `operator unseal`, in Vault's row names. */
import type { SealStatus } from '../../api/index.js';
import { renderValue, table } from '../output.js';

export function sealStatusTable(s: SealStatus): string {
  return table(sealStatusRows(s), ['Key', 'Value']);
}

export function sealStatusRows(s: SealStatus): [string, string][] {
  const rows: [string, string][] = [
    ['Seal Type', s.type],
    ['Initialized', String(s.initialized)],
    ['Sealed', String(s.sealed)],
    ['Total Shares', String(s.n)],
    ['Threshold', String(s.t)],
  ];
  if (s.sealed) {
    rows.push(['Unseal Progress', `${s.progress}/${s.t}`]);
    rows.push(['Unseal Nonce', s.nonce || 'n/a']);
  }
  rows.push(['Version', renderValue(s.version)]);
  if (!s.sealed && s.cluster_id) rows.push(['Cluster ID', s.cluster_id]);
  return rows;
}
