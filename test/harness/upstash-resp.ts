/**
 * A minimal RESP2 client for the Upstash REST fixture. Written here (not ioredis) because the fixture must know
 * what ioredis hides: a status reply (`+OK`) from a bulk string (`$2\r\nOK`), since Upstash's base64 encoding
 * leaves the status "OK" readable and encodes every other string. One connection, pipelined: replies come back
 * in the order commands were written, so a FIFO of waiters is enough, and a MULTI..EXEC written in one go is
 * atomic.
 */
import { connect, type Socket } from 'node:net';

/** A status reply such as `+OK` or `+QUEUED`. */
export class StatusReply {
  constructor(readonly value: string) {}
}

/** An error reply such as `-NOSCRIPT No matching script`. */
export class ErrorReply {
  constructor(readonly message: string) {}
}

/** Bulk strings arrive as bytes (Buffer); integers as numbers; nil as null. */
export type Reply = StatusReply | ErrorReply | Buffer | number | null | Reply[];

type Waiter = { resolve: (reply: Reply) => void; reject: (error: Error) => void };

const NEED_MORE = Symbol('need more bytes');
const CRLF = Buffer.from('\r\n');

export class RespConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly waiters: Waiter[] = [];
  private closedError: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the redis connection closed')));
  }

  static open(port: number, host = '127.0.0.1'): Promise<RespConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host });
      socket.once('connect', () => {
        socket.removeListener('error', reject);
        resolve(new RespConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.closedError !== undefined;
  }

  /** Sends one command. Error replies resolve as ErrorReply (they are data to the fixture), never reject. */
  call(args: ReadonlyArray<string | Buffer>): Promise<Reply> {
    return this.callMany([args]).then((replies) => replies[0]!);
  }

  /** Writes several commands in one write and resolves with their replies in order. */
  callMany(commands: ReadonlyArray<ReadonlyArray<string | Buffer>>): Promise<Reply[]> {
    if (this.closedError !== undefined) return Promise.reject(this.closedError);
    const chunks: Buffer[] = [];
    for (const args of commands) encode(args, chunks);
    const replies = commands.map(
      () =>
        new Promise<Reply>((resolve, reject) => {
          this.waiters.push({ resolve, reject });
        }),
    );
    this.socket.write(Buffer.concat(chunks));
    return Promise.all(replies);
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let offset = 0;
    try {
      while (offset < this.buffer.length) {
        const parsed = parse(this.buffer, offset);
        if (parsed === NEED_MORE) break;
        offset = parsed.end;
        this.waiters.shift()?.resolve(parsed.reply);
      }
    } catch (error) {
      this.fail(error as Error);
      this.socket.destroy();
      return;
    }
    this.buffer = offset === this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(offset);
  }

  private fail(error: Error): void {
    if (this.closedError !== undefined) return;
    this.closedError = error;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }
}

function encode(args: ReadonlyArray<string | Buffer>, out: Buffer[]): void {
  out.push(Buffer.from(`*${args.length}\r\n`));
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg, 'utf8') : arg;
    out.push(Buffer.from(`$${bytes.length}\r\n`), bytes, CRLF);
  }
}

/** Parses one reply at `start`; NEED_MORE when the buffer ends inside it (the caller waits and retries). */
function parse(buffer: Buffer, start: number): { reply: Reply; end: number } | typeof NEED_MORE {
  const lineEnd = buffer.indexOf(CRLF, start);
  if (lineEnd < 0) return NEED_MORE;
  const type = buffer[start];
  const line = buffer.toString('utf8', start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case 0x2b: // '+'
      return { reply: new StatusReply(line), end: next };
    case 0x2d: // '-'
      return { reply: new ErrorReply(line), end: next };
    case 0x3a: // ':'
      return { reply: Number(line), end: next };
    case 0x24: {
      // '$'
      const length = Number(line);
      if (length < 0) return { reply: null, end: next };
      if (buffer.length < next + length + 2) return NEED_MORE;
      return { reply: Buffer.from(buffer.subarray(next, next + length)), end: next + length + 2 };
    }
    case 0x2a: {
      // '*'
      const count = Number(line);
      if (count < 0) return { reply: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, at);
        if (item === NEED_MORE) return NEED_MORE;
        items.push(item.reply);
        at = item.end;
      }
      return { reply: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${String(type)} from redis`);
  }
}
