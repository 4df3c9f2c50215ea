import { beforeEach, describe, expect, it } from '@jest/globals';
import { InvalidRequest, PermissionDenied } from '../../core/errors.js';
import { OperationTokens, decodeOtp } from '../../replication/operation-token.js';
import { SealManager } from '../../seal/index.js';
import { dispatch, type Services } from '../dispatch.js';
import { toApiRequest } from '../request.js';
import { publicServices } from '../testing/public-services.js';
import { drOperationTokenRoutes } from './dr-operation-token.js';
import { MapRecords } from '../../../test/support/map-records.js';

/** A DR secondary that is unsealed and licensed; any attempt to use a client token fails the test. */
function services(licenses: string[]): Services {
  return {
    ...publicServices,
    drSecondary: () => true,
    authenticate: async () => {
      throw new PermissionDenied('these routes must not ask for a client token');
    },
    requireLicense: (feature) => {
      licenses.push(feature);
    },
  };
}

let keys: string[];
let routes: ReturnType<typeof drOperationTokenRoutes>;
let licenses: string[];

beforeEach(async () => {
  const seal = new SealManager(new MapRecords());
  ({ keys } = await seal.init({ secret_shares: 3, secret_threshold: 2 }));
  const tokens = new OperationTokens({
    records: new MapRecords(),
    threshold: async () => (await seal.status()).t,
    verifyShares: (s) => seal.verifyRootKeyShares(s),
  });
  routes = drOperationTokenRoutes(tokens);
  licenses = [];
});

function call(method: string, path: string, body?: unknown, namespace?: string) {
  const req = toApiRequest({
    id: 'r1',
    method,
    url: `/v1/sys/replication/dr/secondary/${path}`,
    headers: namespace === undefined ? {} : { 'x-vault-namespace': namespace },
    rawBody: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
    remoteAddress: '127.0.0.1',
  });
  return dispatch(services(licenses), routes, req);
}

describe('DR operation token routes', () => {
  it('walk a whole generation on a DR secondary without a client token, answering bare objects', async () => {
    const idle = await call('GET', 'generate-operation-token/attempt');
    expect(idle).toEqual({ status: 200, body: expect.objectContaining({ started: false, required: 2, otp_length: 28 }) });
    const started = await call('PUT', 'generate-operation-token/attempt', { otp: '', pgp_key: '' });
    const { nonce, otp } = started.body as { nonce: string; otp: string };
    expect(otp).toHaveLength(28);
    expect((await call('POST', 'generate-operation-token/update', { key: keys[0], nonce })).body).toMatchObject({ progress: 1, complete: false });
    const done = await call('PUT', 'generate-operation-token/update', { key: keys[2], nonce });
    const body = done.body as { complete: boolean; encoded_token: string; encoded_root_token: string };
    expect(done.status).toBe(200);
    expect(body.complete).toBe(true);
    expect(body.encoded_root_token).toBe(body.encoded_token);
    const token = decodeOtp(body.encoded_token, otp);

    expect(await call('POST', 'operation-token/delete', { dr_operation_token: token })).toEqual({ status: 204, body: undefined });
    await expect(call('POST', 'operation-token/delete', { dr_operation_token: token })).rejects.toThrow(PermissionDenied);
    expect(new Set(licenses)).toEqual(new Set(['dr-replication']));
  });

  it('DELETE cancels the attempt with a 204', async () => {
    await call('POST', 'generate-operation-token/attempt', {});
    expect(await call('DELETE', 'generate-operation-token/attempt')).toEqual({ status: 204, body: undefined });
    expect((await call('GET', 'generate-operation-token/attempt')).body).toMatchObject({ started: false });
  });

  it('refuses missing fields with 400s, and calls outside the root namespace', async () => {
    await expect(call('POST', 'generate-operation-token/update', { key: keys[0] })).rejects.toThrow(InvalidRequest);
    await expect(call('POST', 'operation-token/delete', {})).rejects.toThrow(InvalidRequest);
    await expect(call('GET', 'generate-operation-token/attempt', undefined, 'ns1')).rejects.toThrow(/restricted to the root namespace/);
  });
});
