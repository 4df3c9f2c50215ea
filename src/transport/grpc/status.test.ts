import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import * as errors from '../../core/errors.js';
import { MalformedMessage } from './codec.js';
import { ChannelError, NotActiveNode, reasonOfServiceCode } from '../../replication/transport.js';
import { ACTIVE_CLUSTER_ADDR_KEY, NOT_ACTIVE_KEY, channelErrorOf, grpcCodeOf, reasonAcrossGrpc, statusOf } from './status.js';

function serviceError(code: Status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: new Metadata() });
}

describe('server side: error -> status', () => {
  it.each([
    [new errors.InvalidRequest('upgrade the secondary first'), Status.FAILED_PRECONDITION],
    [new errors.PermissionDenied('secondary revoked'), Status.PERMISSION_DENIED],
    [new errors.NotFound('no snapshot'), Status.NOT_FOUND],
    [new errors.UnsupportedOperation(), Status.UNIMPLEMENTED],
    [new errors.Sealed(), Status.UNAVAILABLE],
    [new errors.NotInitialized(), Status.UNAVAILABLE],
    [new errors.Unavailable('catching up'), Status.UNAVAILABLE],
    [new errors.PayloadTooLarge(), Status.RESOURCE_EXHAUSTED],
    [new errors.DrSecondaryPathDisabled(), Status.FAILED_PRECONDITION],
    [new errors.LicenseRequired('dr', 'expired'), Status.FAILED_PRECONDITION],
    [new MalformedMessage('tree 3'), Status.INVALID_ARGUMENT],
  ])('%p -> grpc %s with its safe message', (error, code) => {
    const reported: unknown[] = [];
    expect(statusOf(error, (e) => reported.push(e))).toMatchObject({ code, details: error.message });
    expect(reported).toEqual([]);
  });

  it.each([new errors.Internal('invariant broken at /data/x'), new Error('ENOENT /secret'), 'a string'])(
    '%p -> a bare INTERNAL, reported, never sent',
    (error) => {
      const reported: unknown[] = [];
      expect(statusOf(error, (e) => reported.push(e))).toMatchObject({ code: Status.INTERNAL, details: 'internal error' });
      expect(reported).toEqual([error]);
    },
  );
});

describe('client side: status -> ChannelError', () => {
  it.each([
    [Status.CANCELLED, 'unavailable', 'unavailable'],
    [Status.UNAVAILABLE, 'unavailable', 'unavailable'],
    [Status.RESOURCE_EXHAUSTED, 'unavailable', 'unavailable'],
    [Status.DEADLINE_EXCEEDED, 'deadline', 'unavailable'],
    [Status.PERMISSION_DENIED, 'permission_denied', 'permission_denied'],
    [Status.UNAUTHENTICATED, 'permission_denied', 'permission_denied'],
    [Status.FAILED_PRECONDITION, 'failed_precondition', 'invalid_request'],
    [Status.NOT_FOUND, 'failed_precondition', 'invalid_request'],
    [Status.UNIMPLEMENTED, 'failed_precondition', 'invalid_request'],
    [Status.INVALID_ARGUMENT, 'invalid_argument', 'invalid_request'],
    [Status.INTERNAL, 'internal', 'internal'],
    [Status.UNKNOWN, 'internal', 'internal'],
    [Status.DATA_LOSS, 'internal', 'internal'],
  ] as const)('grpc %s -> %s (TesseraError code %s)', (code, reason, tesseraCode) => {
    const e = channelErrorOf(serviceError(code, 'why'));
    expect(e).toBeInstanceOf(ChannelError);
    expect(e).toBeInstanceOf(errors.TesseraError);
    expect([e.reason, grpcCodeOf(e), e.code, e.message]).toEqual([reason, code, tesseraCode, 'why']);
  });

  it('a malformed message is invalid_argument; anything else internal; a ChannelError passes through', () => {
    expect(channelErrorOf(new MalformedMessage('x')).reason).toBe('invalid_argument');
    expect(channelErrorOf(new Error('boom'))).toMatchObject({ reason: 'internal', message: 'boom' });
    const e = new ChannelError('deadline', 'late');
    expect(channelErrorOf(e)).toBe(e);
  });
});

describe('an HA standby\'s answer on the wire', () => {
  it('is UNAVAILABLE marked tessera-not-active, with the active node\'s address when known, and reads back as NotActiveNode', () => {
    const named = statusOf(new NotActiveNode('10.0.0.2:8201'));
    expect(named.code).toBe(Status.UNAVAILABLE);
    expect(named.metadata?.get(NOT_ACTIVE_KEY)).toEqual(['1']);
    expect(named.metadata?.get(ACTIVE_CLUSTER_ADDR_KEY)).toEqual(['10.0.0.2:8201']);
    const none = statusOf(new NotActiveNode(undefined));
    expect(none.metadata?.get(ACTIVE_CLUSTER_ADDR_KEY)).toEqual([]);
    const back = (st: ReturnType<typeof statusOf>): ChannelError =>
      channelErrorOf(Object.assign(new Error(st.details), { code: st.code, details: st.details, metadata: st.metadata ?? new Metadata() }));
    expect(back(named)).toBeInstanceOf(NotActiveNode);
    expect(back(named)).toMatchObject({ reason: 'unavailable', activeClusterAddr: '10.0.0.2:8201' });
    expect(back(none)).toMatchObject({ reason: 'unavailable', activeClusterAddr: undefined });
    // An unmarked UNAVAILABLE, or the marker on another code, is no standby's answer.
    const forged = serviceError(Status.PERMISSION_DENIED, 'revoked');
    forged.metadata.set(NOT_ACTIVE_KEY, '1');
    forged.metadata.set(ACTIVE_CLUSTER_ADDR_KEY, '10.0.0.9:8201');
    expect(channelErrorOf(forged)).not.toBeInstanceOf(NotActiveNode);
    expect(channelErrorOf(serviceError(Status.UNAVAILABLE, 'down'))).not.toBeInstanceOf(NotActiveNode);
  });
});

describe('the two tables agree with the channel contract', () => {
  it.each(Object.values(errors.ErrorCode))('a service error %s reaches the client with the reason an in-process channel gives', (code) => {
    expect(reasonAcrossGrpc(code)).toBe(reasonOfServiceCode(code));
  });
});
