import { ApiError, ConfigError, NetworkError } from './client';
import { EXIT, UsageError } from './command';
import { formatProblem } from './render';

/** Every failure maps to one exit code and to text for stderr; main and the multi-resource verbs share it. */

export function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError || e instanceof ConfigError) return EXIT.usage;
  if (e instanceof ApiError) {
    if (e.status === 404) return EXIT.notFound;
    return e.status < 500 ? EXIT.refused : EXIT.server;
  }
  return EXIT.server;
}

export function errorText(e: unknown, subject?: string): string {
  const pre = subject ? `${subject}: ` : '';
  if (e instanceof ApiError) return formatProblem(e.status, e.problem, e.raw, subject);
  if (e instanceof UsageError || e instanceof ConfigError || e instanceof NetworkError) {
    return `error: ${pre}${e.message}`;
  }
  const err = e as Error;
  return `error: ${pre}${err?.message ?? String(e)}${process.env.LLMCAP_DEBUG ? `\n${err?.stack}` : ''}`;
}
