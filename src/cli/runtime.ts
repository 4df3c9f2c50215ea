/**
 * How a Tessera server process starts: the V8 flags and the environment that bound its memory.
 * One definition; `bin/tessera.js` carries the same in its shebang (what `npm start`, the image's
 * ENTRYPOINT and an installed `tessera` run), and the test harness gives them to every node it
 * spawns. test/e2e/runtime-flags.test.ts holds the shebang to this.
 *
 *   spawn(process.execPath, [...RUNTIME_NODE_ARGS, mainJs, 'server', ...], { env: { ...process.env, ...RUNTIME_ENV } });
 *
 * - `--max-semi-space-size=4` (MiB): V8's young generation grows to 2 x 16 MiB semi-spaces under
 *   load by default; 4 keeps it at 8.
 * - `MALLOC_ARENA_MAX=2`: glibc gives each thread that allocates concurrently (libuv's pool,
 *   V8's workers, LevelDB's compaction) an arena of its own, up to 8 per core; freed memory in one
 *   arena is not reused by another.
 * Together, PSS of a DR pair under 16 writers 417 -> 346 MB (bench-dr), reads and writes the same
 * within the noise (NOTES, "The hot path (issue 29)").
 */
export const RUNTIME_NODE_ARGS: readonly string[] = ['--max-semi-space-size=4'];

/** Set over the inherited environment, as the shebang's `env -S` sets them. */
export const RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
