/**
 * One call asked again over a time window: `once` runs until it succeeds, while `again(error)`
 * says its failure may pass and the next pause still ends within `forMs`; the pauses grow from
 * 100 ms to 1 s. The last error is thrown as it is. For the activation's calls to a primary that
 * may be between two active nodes for a moment (redeem.ts, activation-check.ts).
 *
 *   const info = await retrying(15_000, () => client.ping(id, 5_000), (e) => !isRefusal(e));
 */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 1000;

export async function retrying<T>(forMs: number, once: () => Promise<T>, again: (error: unknown) => boolean): Promise<T> {
  const until = Date.now() + forMs;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      return await once();
    } catch (e) {
      if (!again(e) || Date.now() + pause > until) throw e;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
