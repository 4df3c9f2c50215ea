/**
 * Server credentials for one cluster port shared by several replication kinds, each with its own
 * CA and server certificate. The TLS server picks the context by SNI: a client names the server
 * certificate it expects (`ssl_target_name_override`, e.g. `primary.<clusterId>.tessera`), gets
 * that certificate, and its own certificate is verified against the CA of the same context only.
 * A client naming no registered server (or no name at all) has no certificate to talk to and the
 * handshake fails; so does one whose certificate another kind's CA issued.
 *
 *   const creds = new SniServerCredentials();
 *   creds.set('primary.c1.tessera', { caPem, certPem, keyPem });   // before or after bind
 *   server.bindAsync('0.0.0.0:8201', creds, cb);
 *   creds.delete('primary.c1.tessera');                           // new handshakes fail at once
 *
 * grpc-js 1.14 builds its HTTP/2 server from `_getConstructorOptions()` (spread into
 * `http2.createSecureServer`) and `_getSecureContextOptions()` (null means "drop connections");
 * `ServerCredentials` has a public constructor taking both, which is the documented way to extend
 * it. Contexts change at run time through the SNICallback's map, never through
 * `setSecureContext`, so adding or removing a kind does not restart the listener.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

export interface SniIdentity {
  /** Verifies client certificates presented under this name. */
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

/** Server names are DNS names: compared without case, as TLS does. */
const keyOf = (serverName: string): string => serverName.toLowerCase();

export class SniServerCredentials extends grpc.ServerCredentials {
  private readonly contexts: Map<string, SecureContext>;

  constructor() {
    const contexts = new Map<string, SecureContext>();
    super(
      {
        requestCert: true,
        rejectUnauthorized: true,
        SNICallback: (serverName, done) => {
          const context = contexts.get(keyOf(serverName));
          // An error aborts the handshake: nothing is served under a name we do not hold.
          if (context) done(null, context);
          else done(new Error(`no replication server certificate for "${serverName.slice(0, 100)}"`));
        },
      },
      // The default context, used without SNI: no certificate, so such a handshake fails. It must
      // be non-null, else grpc-js treats the credentials as not loaded and drops every connection.
      {},
    );
    this.contexts = contexts;
  }

  /** Serves `serverName` with this certificate, verifying clients against this CA. */
  set(serverName: string, identity: SniIdentity): void {
    this.contexts.set(
      keyOf(serverName),
      createSecureContext({ ca: identity.caPem, cert: identity.certPem, key: identity.keyPem }),
    );
  }

  delete(serverName: string): void {
    this.contexts.delete(keyOf(serverName));
  }

  has(serverName: string): boolean {
    return this.contexts.has(keyOf(serverName));
  }

  /** Only the same object: its contexts are mutable, so two instances are never interchangeable. */
  _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }
}
