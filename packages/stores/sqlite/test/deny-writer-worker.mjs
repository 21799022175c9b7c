// One OS process of the SQLite deny list test: its own better-sqlite3 connection to the shared file; once told 'go'
// (so that every process starts at once), `count` changes to list `name`, each adding one entry tagged with this
// process's `tag`; it sends back the version each change made, or the error that stopped it.
import Database from 'better-sqlite3';
import { sqliteConfigSource } from '@sluice/sqlite';

const [file, name, count, tag] = process.argv.slice(2);
const db = new Database(file);
db.pragma('busy_timeout = 30000');
const deny = sqliteConfigSource(db).deny;
process.on('message', () => {
  const versions = [];
  try {
    for (let i = 0; i < Number(count); i++) versions.push(deny.change(name, { add: [{ match: `${tag}:${i}` }] }).version);
    process.send({ versions }, () => process.exit(0));
  } catch (error) {
    process.send({ error: String(error?.message ?? error) }, () => process.exit(1));
  }
});
process.send({ ready: true });
