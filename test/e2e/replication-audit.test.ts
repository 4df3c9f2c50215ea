/**
 * Operator actions on replication are logged (issue 7 item 11): two real node processes at info,
 * a full DR round (enable, tokens issued and revoked, activation, DR operation tokens created,
 * used and deleted, reindex, demote, promote, disable), then their stderr: exactly one JSON line
 * per operation naming it and its outcome (ok, or refused with the error code), and no token
 * value (activation JWT, the wrapping token inside it, DR operation tokens, OTPs) anywhere.
 */
import { decodeOtp } from '../../src/replication/operation-token-encoding.js';
import { activateSecondary, DR, drStatus, enablePrimary, eventually, initAndUnseal, secondaryToken, useHarness, vault, waitInSync } from '../harness/index.js';

const h = useHarness();
const OP = `${DR}/secondary/generate-operation-token`;

interface AuditLine {
  op: string;
  outcome: string;
  error_code?: string;
}

function auditLines(lines: readonly string[]): AuditLine[] {
  return lines
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.audit === 'replication')
    .map((e) => ({ op: e.op as string, outcome: e.outcome as string, ...(e.error_code ? { error_code: e.error_code as string } : {}) }));
}

test('every replication operation writes one info line with its outcome, and no token', async () => {
  const p = await h.startNode({ logLevel: 'info' });
  const s = await h.startNode({ logLevel: 'info' });
  const pk = await initAndUnseal(p.apiAddr);
  const sk = await initAndUnseal(s.apiAddr);
  const pv = vault(p.apiAddr, pk.rootToken);
  const secrets: Record<string, string> = {};

  await enablePrimary(p.apiAddr, pk.rootToken);
  secrets.jwt = await secondaryToken(p.apiAddr, pk.rootToken, 'east');
  secrets.wrappingToken = JSON.parse(Buffer.from(secrets.jwt.split('.')[1]!, 'base64url').toString()).jti;
  secrets.revokedJwt = await secondaryToken(p.apiAddr, pk.rootToken, 'west');
  expect((await pv.post(`${DR}/primary/revoke-secondary`, { id: 'west' })).status).toBe(204);
  expect((await pv.post(`${DR}/primary/secondary-token`, { id: 'not a name' })).status).toBe(400);
  expect((await pv.post('sys/replication/reindex', {})).status).toBe(200);

  await activateSecondary(s.apiAddr, sk.rootToken, secrets.jwt);
  await waitInSync(p.apiAddr, s.apiAddr);

  const sv = vault(s.apiAddr);
  const opToken = async (name: string): Promise<string> => {
    const start = await sv.post(`${OP}/attempt`, {});
    expect(start.status).toBe(200);
    secrets[`${name}Otp`] = start.body.otp;
    let last: any;
    for (const key of pk.keys.slice(0, 2)) last = (await sv.post(`${OP}/update`, { key, nonce: start.body.nonce })).body;
    secrets[`${name}Encoded`] = last.encoded_token;
    secrets[name] = decodeOtp(last.encoded_token, start.body.otp);
    return secrets[name]!;
  };
  const op1 = await opToken('op1');
  expect((await sv.post(`${DR}/secondary/reindex`, { dr_operation_token: op1 })).status).toBe(200);
  expect((await sv.post(`${DR}/secondary/operation-token/delete`, { dr_operation_token: op1 })).status).toBe(204);
  expect((await sv.post(`${DR}/secondary/merkle-check`, { dr_operation_token: op1 })).status).toBe(403);
  const op2 = await opToken('op2');

  expect((await pv.post(`${DR}/primary/demote`, {})).status).toBe(200);
  expect((await sv.post(`${DR}/secondary/promote`, { dr_operation_token: op2 })).status).toBe(204);
  await eventually(async () => expect((await drStatus(s.apiAddr)).mode).toBe('primary'), { timeoutMs: 10_000 });
  expect((await vault(s.apiAddr, pk.rootToken).post(`${DR}/primary/disable`, {})).status).toBe(204);

  expect(await p.stop()).toEqual({ code: 0, signal: null });
  expect(await s.stop()).toEqual({ code: 0, signal: null });

  const count = (lines: AuditLine[], want: AuditLine) => lines.filter((l) => JSON.stringify(l) === JSON.stringify(want)).length;
  const onP = auditLines(p.stderrLines);
  const onS = auditLines(s.stderrLines);
  const expectedP: AuditLine[] = [
    { op: 'dr/primary/enable', outcome: 'ok' },
    { op: 'dr/primary/revoke-secondary', outcome: 'ok' },
    { op: 'dr/primary/secondary-token', outcome: 'refused', error_code: 'invalid_request' },
    { op: 'reindex', outcome: 'ok' },
    { op: 'dr/primary/demote', outcome: 'ok' },
  ];
  for (const want of expectedP) expect({ want, n: count(onP, want) }).toEqual({ want, n: 1 });
  expect(count(onP, { op: 'dr/primary/secondary-token', outcome: 'ok' })).toBe(2);
  const expectedS: AuditLine[] = [
    { op: 'dr/secondary/enable', outcome: 'ok' },
    { op: 'dr/secondary/reindex', outcome: 'ok' },
    { op: 'dr/operation-token/delete', outcome: 'ok' },
    { op: 'dr/operation-token/use', outcome: 'refused', error_code: 'permission_denied' },
    { op: 'dr/secondary/promote', outcome: 'ok' },
    { op: 'dr/primary/disable', outcome: 'ok' },
  ];
  for (const want of expectedS) expect({ want, n: count(onS, want) }).toEqual({ want, n: 1 });
  expect(count(onS, { op: 'dr/generate-operation-token/attempt', outcome: 'ok' })).toBe(2);
  // One share per token (threshold 1).
  expect(count(onS, { op: 'dr/generate-operation-token/update', outcome: 'ok' })).toBe(2);
  expect(count(onS, { op: 'dr/operation-token/use', outcome: 'ok' })).toBe(2);

  // Each line is also a replication event (sys/replication/events): operations on their audit
  // line, state and connection changes on their own, with ids that grow by one per node.
  for (const [lines, modes] of [[p.stderrLines, ['disabled->primary', 'primary->secondary']], [s.stderrLines, ['disabled->bootstrapping', 'bootstrapping->secondary', 'secondary->primary', 'primary->disabled']]] as const) {
    const parsed = lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    const events = parsed.filter((e) => e.event === 'replication');
    expect(parsed.filter((e) => e.audit === 'replication').every((e) => e.event === 'replication' && typeof e.event_id === 'number')).toBe(true);
    const ids = events.map((e) => e.event_id as number);
    expect(ids).toEqual(ids.map((_, i) => 1 + i));
    const changes = events.filter((e) => e.event_type === 'mode-changed').map((e) => `${e.from as string}->${e.to as string}`);
    expect(changes).toEqual(expect.arrayContaining([...modes]));
  }
  expect(s.stderrLines.some((l) => l.includes('"event_type":"connected"'))).toBe(true);
  expect(p.stderrLines.some((l) => l.includes('"event_type":"secondary-connected"'))).toBe(true);

  for (const [name, value] of Object.entries(secrets)) {
    expect(typeof value === 'string' && value.length >= 16).toBe(true);
    const leaks = [...p.stderrLines, ...p.stdoutLines, ...s.stderrLines, ...s.stdoutLines].filter((line) => line.includes(value));
    expect({ name, leaks }).toEqual({ name, leaks: [] });
  }
}, 90_000);
