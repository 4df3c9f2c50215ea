/**
 * The public API of the typed HTTP client; the CLI and integration tests import from here.
 *
 *   import { TesseraClient, ApiError } from '../api/index.js';
 */
export { TesseraClient } from './client.js';
export type { ClientOptions } from './client.js';
export { ApiError, ConnectionFailed, MalformedResponse } from './errors.js';
export { Method, buildUrl, exchange } from './request.js';
export { PlainHttpServer, tlsFetch } from './transport.js';
export type { TlsOptions } from './transport.js';
export type { ApiRequest, ApiResponse, ConnectionOptions, WireRequest, WireResponse } from './request.js';
export { SysApi } from './sys.js';
export { GenerationApi, type GenerationAttempt } from './generation.js';
export { ReplicationApi, ReplicationKind } from './replication.js';
export * from './types.js';
