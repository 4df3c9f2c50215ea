import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeVault, envelope } from '../../api/testing/fake-vault.js';
import { runCli } from '../testing/run-cli.js';

let fake: FakeVault;
const run = (argv: string[]) => runCli(argv, { env: { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' } });

const metadata = { created_time: '2024-01-01T00:00:00Z', deletion_time: '', destroyed: false, version: 2 };

beforeEach(async () => {
  fake = await FakeVault.start();
  fake.on('GET', 'sys/mounts', {
    status: 200,
    body: envelope({
      'secret/': { type: 'kv', options: { version: '2' } },
      'team/kv/': { type: 'kv', options: { version: '2' } },
      'old/': { type: 'kv', options: null },
    }),
  });
});
afterEach(async () => {
  await fake.close();
});

describe('kv put', () => {
  it('writes v2 data under data/ with cas, values as strings, and prints the metadata', async () => {
    fake.on('POST', 'secret/data/app/db', { status: 200, body: envelope(metadata) });
    const r = await run(['kv', 'put', '-mount=secret', '-cas=0', 'app/db', 'user=ada', 'port=5432']);
    expect(r.code).toBe(0);
    const req = fake.requestsTo('secret/data/app/db')[0];
    expect(req?.method).toBe('POST');
    expect(req?.body).toEqual({ data: { user: 'ada', port: '5432' }, options: { cas: 0 } });
    expect(r.stdout).toMatch(/^version\s+2$/m);
  });

  it('finds the mount in the path, including nested mounts, and sends no options without -cas', async () => {
    fake.on('POST', 'team/kv/data/app', { status: 200, body: envelope(metadata) });
    const r = await run(['kv', 'put', 'team/kv/app', 'k=v']);
    expect(r.code).toBe(0);
    expect(fake.requestsTo('team/kv/data/app')[0]?.body).toEqual({ data: { k: 'v' } });
  });

  it('writes a v1 mount flat, at the path itself', async () => {
    fake.on('POST', 'old/app', { status: 204 });
    const r = await run(['kv', 'put', 'old/app', 'k=v']);
    expect(r).toEqual({ code: 0, stdout: 'Success! Data written to: old/app\n', stderr: '' });
    expect(fake.requestsTo('old/app')[0]?.body).toEqual({ k: 'v' });
  });

  it('refuses a put without data, and a path with no secret under the mount', async () => {
    expect((await run(['kv', 'put', 'secret/app'])).code).toBe(2);
    expect((await run(['kv', 'put', 'secret', 'k=v'])).code).toBe(2);
    expect(fake.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('assumes v2 with the first segment as mount when sys/mounts is forbidden', async () => {
    fake.on('GET', 'sys/mounts', { status: 403, body: { errors: ['permission denied'] } });
    fake.on('POST', 'secret/data/app', { status: 200, body: envelope(metadata) });
    expect((await run(['kv', 'put', 'secret/app', 'k=v'])).code).toBe(0);
    expect(fake.requestsTo('secret/data/app')).toHaveLength(1);
  });
});

describe('kv get', () => {
  beforeEach(() => {
    fake.on('GET', 'secret/data/app/db', {
      status: 200,
      body: envelope({ data: { user: 'ada', password: 's3cret' }, metadata }),
    });
  });

  it('reads v2 from data/ with -version and prints metadata and data sections', async () => {
    const r = await run(['kv', 'get', '-mount=secret', '-version=2', 'app/db']);
    expect(r.code).toBe(0);
    expect(fake.requestsTo('secret/data/app/db')[0]?.query).toEqual({ version: '2' });
    expect(r.stdout).toContain('== Secret Path ==\nsecret/data/app/db\n');
    expect(r.stdout).toContain('======= Metadata =======');
    expect(r.stdout).toMatch(/====== Data ======\nKey\s+Value\n---\s+-----\npassword\s+s3cret\nuser\s+ada\n$/);
  });

  it('picks -field from the secret data and prints the envelope with -format=json', async () => {
    expect((await run(['kv', 'get', '-field=password', 'secret/app/db'])).stdout).toBe('s3cret');
    const json = await run(['kv', 'get', '-format=json', 'secret/app/db']);
    expect(JSON.parse(json.stdout)).toMatchObject({ data: { data: { user: 'ada' }, metadata: { version: 2 } } });
  });

  it('reads v1 mounts at the path itself', async () => {
    fake.on('GET', 'old/app', { status: 200, body: envelope({ k: 'v1value' }) });
    const r = await run(['kv', 'get', '-field=k', 'old/app']);
    expect(r).toEqual({ code: 0, stdout: 'v1value', stderr: '' });
  });

  it('exits 2 for a missing secret, naming the API path', async () => {
    fake.on('GET', 'secret/data/none', { status: 404, body: { errors: [] } });
    expect(await run(['kv', 'get', 'secret/none'])).toEqual({ code: 2, stdout: '', stderr: 'No value found at secret/data/none\n' });
  });

  it('exits 1 for an unknown mount and 2 for a non-numeric -version', async () => {
    const unknown = await run(['kv', 'get', '-mount=nomount', 'x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no mount at "nomount/"');
    expect((await run(['kv', 'get', '-version=two', 'secret/app/db'])).code).toBe(2);
  });
});
