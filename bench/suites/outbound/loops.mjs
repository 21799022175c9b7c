// The closed loops of an outbound worker process: `jobs` loops until `endAt` (epoch ms). Either each loop hands
// `schedule` a send function (`schedule` waits for the turn, calls it, which is when the call leaves, and resolves
// with the status), and a wait is enqueue to send; or each loop awaits `call` (the wait and the send inside, as a
// throttled fetch does them), and a wait is enqueue to answer.
// Returns every call's wait ([epoch ms when sent or answered, the wait in ms]), the statuses counted, and the
// failures (a failed call pauses its loop 50 ms).

/** @param {{ jobs: number, endAt: number, schedule?: (send: () => Promise<number>) => Promise<number>, send?: () => Promise<number>, call?: () => Promise<number> }} options */
export async function runLoops({ jobs, endAt, schedule, send, call }) {
  const waits = [];
  const statuses = {};
  const errors = [];
  const loop = async () => {
    while (Date.now() < endAt) {
      const enqueued = performance.now();
      try {
        const status =
          call === undefined
            ? await schedule(() => {
                waits.push([Date.now(), performance.now() - enqueued]);
                return send();
              })
            : await call();
        if (call !== undefined) waits.push([Date.now(), performance.now() - enqueued]);
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
