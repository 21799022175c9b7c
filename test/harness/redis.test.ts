/** The Redis harness other suites rely on: loud when the binary is missing, and its faults do what they say. */
import { afterAll, expect, test } from 'vitest';
import { rawCommand, requireRedisBinaries, startRedis, type RedisServer } from './redis.js';

const servers: RedisServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

test('a missing redis-server is a loud error naming the install command, never a skip', () => {
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  try {
    expect(() => requireRedisBinaries()).toThrow(/redis-server was not found on PATH.*apt-get install redis-server/);
  } finally {
    process.env.PATH = path;
  }
});

test('pause hangs the server, resume answers again, kill closes the port, restart reopens the same port empty', async () => {
  const server = await startRedis();
  servers.push(server);
  await rawCommand(server.port, 'SET k v');
  server.pause();
  await expect(rawCommand(server.port, 'PING', 200)).rejects.toThrow(/no reply/);
  server.resume();
  expect(await rawCommand(server.port, 'PING')).toBe('+PONG\r\n');
  const pid = server.pid;
  await server.kill();
  await expect(rawCommand(server.port, 'PING', 200)).rejects.toThrow(/ECONNREFUSED/);
  await server.restart();
  expect(server.pid).not.toBe(pid);
  expect(await rawCommand(server.port, 'GET k')).toBe('$-1\r\n'); // no persistence: a restart is a fresh server
});
