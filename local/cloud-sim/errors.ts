/** EKS exceptions with the HTTP status the service model gives them (docs/reference/eks-nodegroup.md §1.6). */
export const EKS_ERROR_STATUS = {
  ResourceInUseException: 409,
  ResourceLimitExceededException: 400,
  InvalidRequestException: 400,
  InvalidParameterException: 400,
  ClientException: 400,
  ServerException: 500,
  ServiceUnavailableException: 503,
  ResourceNotFoundException: 404,
  ThrottlingException: 429,
  // The tagging operations (TagResource, UntagResource, ListTagsForResource) answer with these two.
  BadRequestException: 400,
  NotFoundException: 404,
  // Not modelled for EKS: what a REST API answers for a route or body it cannot read.
  UnknownOperationException: 404,
  SerializationException: 400,
} as const;

export type EksErrorType = keyof typeof EKS_ERROR_STATUS;

export class EksError extends Error {
  readonly status: number;

  constructor(
    readonly type: EksErrorType,
    message: string,
    /** Extra members of the error body, e.g. clusterName and nodegroupName. */
    readonly members: { clusterName?: string; nodegroupName?: string } = {},
  ) {
    super(message);
    this.status = EKS_ERROR_STATUS[type];
  }

  body(): Record<string, unknown> {
    return { message: this.message, ...this.members };
  }
}

export const invalidParam = (message: string, members: EksError['members'] = {}) =>
  new EksError('InvalidParameterException', message, members);
