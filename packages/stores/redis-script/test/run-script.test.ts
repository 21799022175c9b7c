/**
 * The NOSCRIPT fallback both Redis-protocol stores run: what counts as a script miss in each client's wording,
 * and that a miss is answered by exactly one EVAL while any other failure is passed on untouched (the script
 * may have run: a retry could count a decision twice). The real clients' errors from a real redis-server are
 * checked in test/ioredis-majors/noscript.test.ts and packages/stores/upstash/test/upstash-redis-client.node.test.ts.
 */
import { ReplyError } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { isNoScript, runScript, type ScriptCommands } from '../src/index.js';

/** What Redis 7.0 answers EVALSHA of an unknown SHA-1 with (later versions drop the second sentence). */
const REPLY = 'NOSCRIPT No matching script. Please use EVAL.';
const COMMAND = JSON.stringify(['evalsha', 'f'.repeat(40), '1', 'k', 'a']);

describe('isNoScript', () => {
  test.each([
    ['ioredis: a ReplyError carrying the reply', new ReplyError(REPLY)],
    ['ioredis: the shorter reply of later Redis versions', new ReplyError('NOSCRIPT No matching script.')],
    ['@upstash/redis, one command per request: the reply, then the command', new Error(`${REPLY}, command was: ${COMMAND}`)],
    ['@upstash/redis, auto-pipelined: "Command failed: " before the reply', new Error(`Command failed: ${REPLY}`)],
  ])('%s is a miss', (_, error) => {
    expect(isNoScript(error)).toBe(true);
  });

  test.each([
    [
      'a script error that mentions NOSCRIPT',
      new ReplyError('ERR user_script:1: NOSCRIPT x script: 1b22735bda54d5ab4bb9b02a17e7ab308efa7f57, on @user_script:1.'),
    ],
    ['another code', new ReplyError('BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.')],
    ['another code through @upstash/redis', new Error(`ERR wrong number of arguments for 'evalsha' command, command was: ${COMMAND}`)],
    ['a connection error', new Error('Connection is closed.')],
    ['a word that starts with NOSCRIPT', new Error('NOSCRIPTS are fine')],
    ['not an Error', { message: REPLY }],
    ['a string', REPLY],
  ])('%s is not', (_, error) => {
    expect(isNoScript(error)).toBe(false);
  });
});

/** Commands that answer as told, recording every call. */
function commands(evalsha: () => Promise<unknown>, evalText: () => Promise<unknown> = () => Promise.resolve('by text')) {
  const calls: string[] = [];
  const sent: Array<[string[], string[]]> = [];
  const script: ScriptCommands = {
    evalsha: (keys, args) => (calls.push('evalsha'), sent.push([keys, args]), evalsha()),
    eval: (keys, args) => (calls.push('eval'), sent.push([keys, args]), evalText()),
  };
  return { script, calls, sent };
}

describe('runScript', () => {
  test('EVALSHA answers: its reply, and no EVAL', async () => {
    const { script, calls } = commands(() => Promise.resolve([0, 1]));
    expect(await runScript(script, ['k'], ['1'])).toEqual([0, 1]);
    expect(calls).toEqual(['evalsha']);
  });

  test.each([
    ['ioredis', new ReplyError(REPLY)],
    ['@upstash/redis', new Error(`${REPLY}, command was: ${COMMAND}`)],
    ['@upstash/redis auto-pipelined', new Error(`Command failed: ${REPLY}`)],
  ])('NOSCRIPT (%s): one EVAL of the same keys and arguments, whose reply is the answer', async (_, miss) => {
    const { script, calls, sent } = commands(() => Promise.reject(miss));
    expect(await runScript(script, ['k1', 'k2'], ['@5', '1'])).toBe('by text');
    expect(calls).toEqual(['evalsha', 'eval']);
    expect(sent[1]).toEqual([
      ['k1', 'k2'],
      ['@5', '1'],
    ]);
  });

  test('any other EVALSHA failure is passed on as it is, with no EVAL', async () => {
    const failure = new ReplyError('ERR Error running script');
    const { script, calls } = commands(() => Promise.reject(failure));
    await expect(runScript(script, ['k'], ['1'])).rejects.toBe(failure);
    expect(calls).toEqual(['evalsha']);
  });

  test('a failing EVAL after NOSCRIPT is passed on: one fallback, never a loop', async () => {
    const failure = new Error('Connection is closed.');
    const { script, calls } = commands(
      () => Promise.reject(new ReplyError(REPLY)),
      () => Promise.reject(failure),
    );
    await expect(runScript(script, ['k'], ['1'])).rejects.toBe(failure);
    expect(calls).toEqual(['evalsha', 'eval']);
  });
});
