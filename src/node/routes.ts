/**
 * Every route of a node, in match order (specific before wildcard), and its static pages.
 */
import { fileURLToPath } from 'node:url';
import type { Route } from '../http/route.js';
import type { StaticSiteSpec } from '../http/static.js';
import { authMethodRoutes } from '../http/routes/auth-methods.js';
import { mountRoutes } from '../http/routes/mounts.js';
import { auditRoutes } from '../http/routes/audit.js';
import { namespaceRoutes } from '../http/routes/namespaces.js';
import { policyRoutes } from '../http/routes/policies.js';
import { drOperationTokenRoutes } from '../http/routes/dr-operation-token.js';
import { generateRootRoutes, type GenerationService } from '../http/routes/generate-root.js';
import { pathsFilterRoutes, replicationKindRoutes } from '../http/routes/replication-kind.js';
import { replicationRoutes } from '../http/routes/replication.js';
import { replicationEventsRoutes } from '../http/routes/replication-events.js';
import { haRoutes } from '../http/routes/ha.js';
import { keyRoutes } from '../http/routes/keys.js';
import { sealRoutes, type NodeFacts } from '../http/routes/seal.js';
import { VERSION } from '../core/version.js';
import { hostname } from 'node:os';
import { systemRoutes, type SystemService } from '../http/routes/system.js';
import { tokenRoutes } from '../http/routes/tokens.js';
import { wrappingRoutes } from '../http/routes/wrapping.js';
import { cubbyholeRoutes } from '../http/routes/cubbyhole.js';
import { Cubbyhole } from '../vault/cubbyhole.js';
import type { ReplicationUnit } from '../replication/index.js';
import type { VaultCore } from '../vault/core.js';

/** The routes over the core's services and the replication unit's facets (each route file declares what it needs). */
export function nodeRoutes(core: VaultCore, facts: NodeFacts, repl: ReplicationUnit, sys: SystemService, generateRoot: GenerationService): Route[] {
  return [
    ...sealRoutes(core, facts),
    ...haRoutes(facts.ha, () => ({
      hostname: hostname(),
      api_address: facts.apiAddr(),
      cluster_address: facts.clusterAddr() === '' ? '' : `https://${facts.clusterAddr()}`,
      active_node: true,
      last_echo: null,
      echo_duration_ms: 0,
      clock_skew_ms: 0,
      version: VERSION,
      upgrade_version: VERSION,
      redundancy_zone: '',
      replication_primary_canary_age_ms: 0,
    })),
    ...generateRootRoutes(generateRoot),
    ...replicationRoutes(repl.status),
    ...replicationEventsRoutes(repl.events),
    ...drOperationTokenRoutes(repl.drTokens),
    ...replicationKindRoutes('dr', repl.dr),
    ...replicationKindRoutes('performance', repl.performance),
    ...pathsFilterRoutes(repl.pathsFilters),
    ...systemRoutes(sys),
    ...keyRoutes(core),
    ...wrappingRoutes(core.wrapping, repl.resolveWrappingToken),
    ...tokenRoutes(core.tokens, repl.resolveWrappingToken),
    ...authMethodRoutes(core.auth, core.ttlLimits),
    ...policyRoutes(core.policies),
    ...namespaceRoutes(core.namespaces, core.mounts, core.auth),
    ...mountRoutes(core.mounts, core.ttlLimits),
    ...auditRoutes(core.audit),
    ...cubbyholeRoutes(new Cubbyhole(() => core.store()), core.tokens),
  ];
}

/**
 * The topology dashboard at `/ui/` (src/ui/static, copied to dist/ui/static by the build): three
 * files, no framework, no CDN; it polls the status endpoints (and, with a token, what they do not
 * show). Resolved beside this module so it works from src/ (tests) and dist/ alike.
 */
export function dashboardSite(): StaticSiteSpec {
  return {
    prefix: '/ui',
    dir: fileURLToPath(new URL('../ui/static/', import.meta.url)),
    files: {
      '': { file: 'index.html', contentType: 'text/html' },
      'index.html': { file: 'index.html', contentType: 'text/html' },
      'app.js': { file: 'app.js', contentType: 'text/javascript' },
      'style.css': { file: 'style.css', contentType: 'text/css' },
    },
  };
}
