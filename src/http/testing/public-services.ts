/**
 * The services of an HTTP listener that serves public routes only (unsealed, initialized, no
 * auth, no replication), for tests of the listener itself: framing, timeouts, client errors.
 *
 *   const http = await startHttp({ routes, services: publicServices, log, ... });
 */
import type { Services } from '../dispatch.js';

export const publicServices: Services = {
  initialized: async () => true,
  sealed: () => false,
  drSecondary: () => false,
  resolveNamespace: (namespace, path) => ({ namespace, path }),
  authenticate: async () => {
    throw new Error('public routes only');
  },
  requireLicense: () => {},
  logical: async () => undefined,
  engineHelp: async () => undefined,
  wrap: async () => ({}),
};
