/**
 * Worker processes of the multi-process suites (forked with an IPC channel): wait for one message, and stop them
 * at the end, each by its own handle (a `stop` message, SIGKILL if it has not exited within 5 s).
 */
import type { ChildProcess } from 'node:child_process';

/** The next message of `type` from `child`; rejects if the child exits first. */
export function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      reject(new Error(`worker ${child.pid} exited (${signal ?? code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Sends each live child `{ type: 'stop' }` and waits for it to exit; one that lingers 5 s is SIGKILLed. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
}
