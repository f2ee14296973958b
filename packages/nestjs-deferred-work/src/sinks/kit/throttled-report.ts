/**
 * Reports an event that may repeat fast (a reconnect attempt's error, an unhandled rejection) without
 * flooding: the first at once, then at most one report per `intervalMs`, each given how many there
 * have been so far (1 for the first) and the event itself.
 */
export function throttledReport<E>(intervalMs: number, report: (count: number, event: E) => void): (event: E) => void {
  let count = 0;
  let reportedAt = 0;
  return (event) => {
    count++;
    if (reportedAt !== 0 && Date.now() - reportedAt < intervalMs) return;
    reportedAt = Date.now();
    report(count, event);
  };
}
