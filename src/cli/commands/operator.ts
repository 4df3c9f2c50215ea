/** `tessera operator ...`: node lifecycle, HA and maintenance commands. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { register as registerDr } from './operator-dr.js';
import { register as registerGenerateDrToken } from './operator-generate-dr-token.js';
import { register as registerGenerateRoot } from './operator-generate-root.js';
import { register as registerInit } from './operator-init.js';
import { register as registerKeys } from './operator-keys.js';
import { register as registerMembers } from './operator-members.js';
import { register as registerReindex } from './operator-reindex.js';
import { register as registerSeal } from './operator-seal.js';
import { register as registerStepDown } from './operator-step-down.js';
import { register as registerUnseal } from './operator-unseal.js';

export function register(parent: Command, ctx: Context): void {
  const operator = parent.command('operator').description('Initialise, unseal, seal and maintain a node');
  registerInit(operator, ctx);
  registerUnseal(operator, ctx);
  registerSeal(operator, ctx);
  registerReindex(operator, ctx);
  registerGenerateRoot(operator, ctx);
  registerGenerateDrToken(operator, ctx);
  registerDr(operator, ctx);
  registerStepDown(operator, ctx);
  registerMembers(operator, ctx);
  registerKeys(operator, ctx);
}
