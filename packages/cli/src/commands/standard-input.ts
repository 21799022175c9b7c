/**
 * Standard input read whole, as the `sluice config` commands that take a file or `-` read it. Read as a stream: a
 * synchronous read of a pipe (readFileSync(0)) fails with EAGAIN when the writer has not yet written all of it, as
 * an export of 100,000 deny entries piped in did.
 */
export async function readStandardInput(): Promise<string> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk as string;
  return text;
}
