/**
 * Judges a saved nemesis run again (after changing the checker, say); the checker itself is
 * test/harness/nemesis-check.ts.
 *
 *   node scripts/nemesis-check.mjs bench-results/nemesis-7.summary.json
 */
import '@swc-node/register/esm-register';

const { recheck } = await import('../test/harness/nemesis-check.js');
const path = process.argv[2];
if (!path) {
  console.error('usage: node scripts/nemesis-check.mjs OUT/nemesis-<seed>.summary.json');
  process.exit(2);
}
recheck(path).then((v) => {
  console.log(`acknowledged ${v.acknowledged}, lost ${v.lost}, failover loss ${v.failoverLoss.length}, violations ${v.violations.length}`);
  for (const x of v.violations.slice(0, 20)) console.log(`  ${JSON.stringify(x)}`);
  process.exit(v.violations.length === 0 ? 0 : 1);
}, (e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(2);
});
