/** Polls `check` until it stops throwing, or rethrows its last error after `timeoutMs`. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000, everyMs = 5): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
