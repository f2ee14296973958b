/**
 * Adds each job with a call of its own, all at once, and tells `added(k)` as soon as job `k`'s add
 * resolved with the job in Redis — so a write cut short keeps it confirmed. Resolves with every
 * outcome, in order (an outcome is what `addOne` resolved with; `wasAdded` tells the added ones).
 */
export function addEach<J, R>(jobs: readonly J[], addOne: (job: J) => Promise<R>, wasAdded: (outcome: R) => boolean, added?: (k: number) => void): Promise<R[]> {
  return Promise.all(
    jobs.map((job, k) =>
      addOne(job).then((outcome) => {
        if (added && wasAdded(outcome)) added(k);
        return outcome;
      }),
    ),
  );
}
