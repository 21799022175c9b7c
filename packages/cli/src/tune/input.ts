/**
 * Log inputs as chunks of bytes: files or standard input, each gunzipped when its first two bytes are gzip's
 * magic number (1f 8b), whatever its name. `progress.bytes` counts the bytes read before decompression, so a
 * progress bar over the files' sizes is right for compressed files too.
 */
import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

export interface InputProgress {
  /** Bytes read from the sources so far (compressed bytes for gzip). */
  bytes: number;
}

export interface InputSource {
  /** A path, or `-` for standard input. */
  readonly name: string;
  /** Size in bytes when known (regular files), for the progress bar's total. */
  readonly size: number | undefined;
  open(): Readable;
}

/** `-` is standard input; anything else a file path. */
export function inputSource(name: string, stdin: Readable = process.stdin): InputSource {
  if (name === '-') return { name, size: undefined, open: () => stdin };
  const stat = statSync(name);
  return { name, size: stat.isFile() ? stat.size : undefined, open: () => createReadStream(name, { highWaterMark: 1 << 20 }) };
}

async function* counted(stream: Readable, progress: InputProgress): AsyncGenerator<Buffer> {
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    progress.bytes += buffer.length;
    yield buffer;
  }
}

/** The decompressed bytes of `stream`. */
export async function* decodedChunks(stream: Readable, progress: InputProgress): AsyncGenerator<Buffer> {
  const raw = counted(stream, progress);
  // Standard input may deliver a single byte first: gather two before deciding.
  let head: Buffer = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await raw.next();
    if (next.done) {
      if (head.length > 0) yield head;
      return;
    }
    head = head.length === 0 ? next.value : Buffer.concat([head, next.value]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield head;
    yield* raw;
  }
  if (head[0] === 0x1f && head[1] === 0x8b) {
    yield* Readable.from(all(), { objectMode: false }).pipe(createGunzip({ chunkSize: 1 << 18 }));
  } else {
    yield* all();
  }
}
