/** The lines `run` writes to stdout, as the Lambda runtime hands them to CloudWatch Logs (and not to the terminal). */
export function printedLines(run: () => void): string[] {
  const out: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    out.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  }) as typeof process.stdout.write;
  try {
    run();
  } finally {
    process.stdout.write = write;
  }
  return out.join('').split('\n').filter(Boolean);
}
