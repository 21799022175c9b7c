// The SQLite store on a worker thread, for the event-loop stall test: the thread decides each request it is sent
// with sqliteStore over its own connection to the file, and posts the result back. `slowMs` makes every answer
// come that much later (the thread is busy meanwhile): a store that is slow while the caller's loop is healthy.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { sqliteStore } from '@sluice/sqlite';

const store = sqliteStore(new Database(workerData.file));

parentPort.on('message', ({ id, method, args, slowMs }) => {
  const until = Date.now() + slowMs;
  while (Date.now() < until) {
    // a slow store: this thread is busy, the caller's is not
  }
  try {
    parentPort.postMessage({ id, value: store[method](...args) });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error) });
  }
});
