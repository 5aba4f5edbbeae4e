/**
 * Domain errors carry an HTTP-independent kind; the API maps kinds to status codes. Messages say what to do.
 */
export type DomainErrorKind =
  | 'invalid' // 400: the request itself is malformed
  | 'forbidden' // 403
  | 'not-found' // 404
  | 'conflict' // 409: the request conflicts with the rules or the current state
  | 'precondition'; // 409: If-Match did not match

export interface FieldIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly details: { reason?: string; errors?: FieldIssue[]; title?: string } = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (message: string, errors?: FieldIssue[]) =>
  new DomainError('invalid', message, { errors });
export const notFound = (message: string) => new DomainError('not-found', message);
export const conflict = (message: string, reason?: string) =>
  new DomainError('conflict', message, { reason });
export const forbidden = (message: string) => new DomainError('forbidden', message);
