// Preloaded into a node process by tests (`--import`): SIGUSR2 blocks its main thread's event loop
// for the number of ms written in the file $TESSERA_TEST_STALL_FILE, as a long GC pause or a
// busy machine would. Worker threads go on. Test code only; the product has no such hook.
import { readFileSync } from 'node:fs';

process.on('SIGUSR2', () => {
  const ms = Number(readFileSync(process.env.TESSERA_TEST_STALL_FILE ?? '', 'utf8'));
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // Busy on purpose: nothing else runs on this thread meanwhile.
  }
});
