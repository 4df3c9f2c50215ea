/**
 * DR replication between two in-process nodes over real gRPC/mTLS on 127.0.0.1: activation,
 * streaming, the DR secondary's surface, DR operation tokens, promotion, demotion and rejoin.
 * Runs on LevelDB and on PostgreSQL (forEachEngine, test/support/engines.ts).
 */
import { eventually } from '../harness/eventually.js';
import { DR, drOperationToken, drStatus as status, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { forEachEngine } from '../support/engines.js';

forEachEngine(() => {
  describe('DR replication (in-process nodes, real gRPC)', () => {
    let p: TestNode;
    let s: TestNode;
    afterEach(async () => {
      await s?.stop();
      await p?.stop();
    });

    it('activates, streams, answers as a DR secondary, and fails over with a DR operation token', async () => {
      p = await startTestNode();
      s = await startTestNode();
      await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
      for (let i = 0; i < 20; i++) await p.call('PUT', `secret/data/before/${i}`, { data: { i } });

      expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
      const ps = await status(p);
      expect(ps).toMatchObject({ mode: 'primary', state: 'running' });
      expect(ps.cluster_id).toMatch(/^[0-9a-f-]{36}$/);

      const tok = await p.call('POST', `${DR}/primary/secondary-token`, { id: 'dr-east' });
      expect(tok.status).toBe(200);
      expect(tok.body.data).toBeNull();
      const jwt = tok.body.wrap_info.token as string;
      expect(jwt.split('.')).toHaveLength(3);
      expect(tok.body.wrap_info.ttl).toBe(1800);
      const claims = JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString());
      expect(claims).toMatchObject({ type: 'wrapping', addr: p.apiAddr });
      expect((await p.call('POST', `${DR}/primary/secondary-token`, { id: 'dr-east' })).status).toBe(400);

      expect((await s.call('POST', `${DR}/secondary/enable`, { token: jwt })).status).toBe(204);
      await inSync(p, s);
      await eventually(async () => expect((await status(s)).state).toBe('stream-wals'), { timeoutMs: 10_000 });
      const ss = await status(s);
      expect(ss).toMatchObject({ mode: 'secondary', cluster_id: ps.cluster_id, secondary_id: 'dr-east', connection_state: 'ready' });
      expect(typeof ss.last_remote_wal).toBe('number');

      // The token was single-use.
      const reuse = await startTestNode();
      const again = await reuse.call('POST', `${DR}/secondary/enable`, { token: jwt });
      expect(again.status).toBe(400);
      expect(again.body.errors[0]).toMatch(/refused the activation token/);
      expect((await status(reuse)).mode).toBe('disabled');
      await reuse.stop();

      // Writes stream as they commit.
      await p.call('PUT', 'secret/data/after', { data: { v: 'streamed' } });
      await inSync(p, s);
      await eventually(async () => {
        const st = await status(p);
        expect(st.known_secondaries).toEqual(['dr-east']);
        expect(st.secondaries[0]).toMatchObject({ node_id: 'dr-east', connection_status: 'connected' });
      }, { timeoutMs: 10_000 });

      // The DR secondary's surface.
      const denied = await s.call('GET', 'secret/data/after', undefined, { token: p.rootToken });
      expect(denied.status).toBe(400);
      expect(denied.body.errors).toEqual(['path disabled in replication DR secondary mode']);
      expect((await s.call('GET', 'sys/health', undefined, { token: null })).status).toBe(472);
      expect((await s.call('GET', 'sys/health?drsecondarycode=200', undefined, { token: null })).status).toBe(200);

      // DR operation token from the PRIMARY's unseal keys, then promote.
      const badPromote = await s.call('POST', `${DR}/secondary/promote`, { dr_operation_token: 'hvs.notavalidtokenatall0000' }, { token: null });
      expect(badPromote.status).toBe(403);
      const opToken = await drOperationToken(s, p.unsealKeys.slice(0, 2));
      expect(opToken).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);
      await p.stop({ keepDir: false });
      const promoted = await s.call('POST', `${DR}/secondary/promote`, { dr_operation_token: opToken }, { token: null });
      expect(promoted.status).toBe(204);
      expect((await status(s)).mode).toBe('primary');
      expect((await status(s)).cluster_id).toBe(ps.cluster_id);
      // The old primary's root token and data live on.
      expect((await s.call('GET', 'secret/data/after', undefined, { token: p.rootToken })).body.data.data).toEqual({ v: 'streamed' });
      expect((await s.call('PUT', 'secret/data/post-failover', { data: { ok: true } }, { token: p.rootToken })).status).toBe(200);
      expect((await s.call('GET', 'sys/health', undefined, { token: null })).status).toBe(200);
      p = undefined as unknown as TestNode;
    });
  });
});
