// The closed loops of an outbound worker process: `jobs` loops until `endAt` (epoch ms), each handing `schedule` a
// send function; `schedule` waits for the turn, calls it (that is when the call leaves) and resolves with the status.
// Returns every call's wait ([epoch ms when sent, enqueue to send in ms]), the statuses counted, and the failures
// (a failed call pauses its loop 50 ms).

/** @param {{ jobs: number, endAt: number, schedule: (send: () => Promise<number>) => Promise<number>, send: () => Promise<number> }} options */
export async function runLoops({ jobs, endAt, schedule, send }) {
  const waits = [];
  const statuses = {};
  const errors = [];
  const loop = async () => {
    while (Date.now() < endAt) {
      const enqueued = performance.now();
      try {
        const status = await schedule(() => {
          waits.push([Date.now(), performance.now() - enqueued]);
          return send();
        });
        statuses[status] = (statuses[status] ?? 0) + 1;
      } catch (error) {
        errors.push(String(error?.message ?? error));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: jobs }, loop));
  return { waits, statuses, errors };
}
