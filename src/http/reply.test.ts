import { emptyList, type Reply } from './reply.js';

const env = (data: Record<string, unknown> | null, extra: Partial<Extract<Reply, { kind: 'envelope' }>> = {}): Extract<Reply, { kind: 'envelope' }> => ({ kind: 'envelope', data, ...extra });

/** Vault's sdk/logical/response_util.go RespondErrorCommon, case by case. */
describe('emptyList: which LIST answers are 404', () => {
  it('no data, or keys empty or null, is 404', () => {
    expect(emptyList(env(null))).toBe(true);
    expect(emptyList(env({}))).toBe(true);
    expect(emptyList(env({ keys: [] }))).toBe(true);
    expect(emptyList(env({ keys: [], key_info: {} }))).toBe(true);
  });

  it('keys, other data without keys, warnings alone, or a wrapped answer are answered as they are', () => {
    expect(emptyList(env({ keys: ['a'] }))).toBe(false);
    expect(emptyList(env({ nodes: [] }))).toBe(false);
    expect(emptyList(env({ keys: null, other: 1 }))).toBe(false);
    expect(emptyList(env(null, { warnings: ['careful'] }))).toBe(false);
    expect(emptyList(env({ keys: [] }, { wrapInfo: { token: 't' } }))).toBe(false);
  });
});
