/**
 * Whether `promise` settles (either way) before `deadline` (`Date.now()` ms). It is not cancelled when
 * it does not; its late rejection is handled. For a shutdown step that must not outlast its deadline
 * when a server stops answering.
 */
export async function settlesBy(promise: Promise<unknown> | undefined, deadline: number): Promise<boolean> {
  if (!promise) return true;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()), false)));
  try {
    return await Promise.race([promise.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
