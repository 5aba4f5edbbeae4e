import { loadSnapshot } from './aws-snapshot';

/**
 * The AWS Price List Query API over JSON 1.1 (POST /, X-Amz-Target: AWSPriceListService.<Operation>):
 * GetProducts for service AmazonEC2 from the checked-in price snapshot. Each PriceList entry is a JSON string,
 * as AWS returns it. Errors are `{"__type", "Message"}` with the x-amzn-ErrorType header.
 */

export const PRICING_TARGET = 'AWSPriceListService.';

export type PricingErrorType =
  | 'InvalidParameterException'
  | 'NotFoundException'
  | 'InvalidNextTokenException'
  | 'ThrottlingException'
  | 'InternalErrorException'
  | 'SerializationException'
  | 'UnknownOperationException';

export class PricingError extends Error {
  constructor(
    readonly type: PricingErrorType,
    message: string,
  ) {
    super(message);
  }

  get status(): number {
    return this.type === 'InternalErrorException' ? 500 : 400;
  }
}

export function isPricingRequest(target: string | string[] | undefined): target is string {
  return typeof target === 'string' && target.startsWith(PRICING_TARGET);
}

export function handlePricing(
  target: string,
  raw: string,
): { operation: string; handle: () => Record<string, unknown> } {
  const operation = target.slice(PRICING_TARGET.length);
  return {
    operation,
    handle: () => {
      if (operation !== 'GetProducts')
        throw new PricingError('UnknownOperationException', `Operation ${operation} is not simulated`);
      let body: unknown;
      try {
        body = raw.trim() ? JSON.parse(raw) : {};
      } catch {
        throw new PricingError('SerializationException', 'The request body is not valid JSON');
      }
      return getProducts(body as GetProductsInput);
    },
  };
}

interface GetProductsInput {
  ServiceCode?: string;
  Filters?: { Type?: string; Field?: string; Value?: string }[];
  FormatVersion?: string;
  NextToken?: string;
  MaxResults?: number;
}

const FILTER_TYPES = ['TERM_MATCH', 'EQUALS', 'CONTAINS', 'ANY_OF', 'NONE_OF'] as const;
type FilterType = (typeof FILTER_TYPES)[number];

/** A product's value for a filter field: the attributes, productFamily and sku, field names without case. */
function fieldValue(entry: Record<string, any>, field: string): string | undefined {
  const f = field.toLowerCase();
  if (f === 'productfamily') return entry.product?.productFamily;
  if (f === 'sku') return entry.product?.sku;
  if (f === 'servicecode') return entry.serviceCode;
  const attrs: Record<string, string> = entry.product?.attributes ?? {};
  const key = Object.keys(attrs).find((k) => k.toLowerCase() === f);
  return key === undefined ? undefined : attrs[key];
}

function matches(entry: Record<string, any>, type: FilterType, field: string, value: string): boolean {
  const v = fieldValue(entry, field);
  const list = () => value.split(',').map((s) => s.trim());
  switch (type) {
    case 'TERM_MATCH':
    case 'EQUALS':
      return v === value;
    case 'CONTAINS':
      return v?.includes(value) ?? false;
    case 'ANY_OF':
      return v !== undefined && list().includes(v);
    case 'NONE_OF':
      return v === undefined || !list().includes(v);
  }
}

const TOKEN_PREFIX = 'llmcap-sim:';

function getProducts(input: GetProductsInput): Record<string, unknown> {
  if (typeof input.ServiceCode !== 'string' || input.ServiceCode === '')
    throw new PricingError('InvalidParameterException', 'Input validation error: ServiceCode is required');
  const format = input.FormatVersion ?? 'aws_v1';
  if (format !== 'aws_v1')
    throw new PricingError(
      'InvalidParameterException',
      `Input validation error: invalid FormatVersion ${format}`,
    );
  const max = input.MaxResults ?? 100;
  if (!Number.isInteger(max) || max < 1 || max > 100)
    throw new PricingError(
      'InvalidParameterException',
      `1 validation error detected: Value '${input.MaxResults}' at 'maxResults' failed to satisfy constraint: Member must have value between 1 and 100`,
    );
  // Only EC2's prices are in the snapshot; another service code is one the simulator does not know.
  if (input.ServiceCode !== 'AmazonEC2')
    throw new PricingError(
      'NotFoundException',
      `Service code ${input.ServiceCode} is not simulated (only AmazonEC2)`,
    );
  const filters = (input.Filters ?? []).map((f) => {
    if (!FILTER_TYPES.includes(f.Type as FilterType))
      throw new PricingError(
        'InvalidParameterException',
        `Input validation error: invalid filter type ${f.Type}; use one of ${FILTER_TYPES.join(', ')}`,
      );
    if (!f.Field || f.Value === undefined)
      throw new PricingError(
        'InvalidParameterException',
        'Input validation error: a filter needs Field and Value',
      );
    return { type: f.Type as FilterType, field: f.Field, value: f.Value };
  });
  const found = loadSnapshot().priceList.filter((e) =>
    filters.every((f) => matches(e, f.type, f.field, f.value)),
  );
  let start = 0;
  if (input.NextToken) {
    const s = Buffer.from(input.NextToken, 'base64url').toString('utf8');
    const n = Number(s.slice(TOKEN_PREFIX.length));
    if (!s.startsWith(TOKEN_PREFIX) || !Number.isInteger(n) || n < 0)
      throw new PricingError(
        'InvalidNextTokenException',
        'The pagination token is invalid. Try again without a pagination token.',
      );
    start = n;
  }
  const page = found.slice(start, start + max);
  const next =
    start + max < found.length
      ? Buffer.from(`${TOKEN_PREFIX}${start + max}`).toString('base64url')
      : undefined;
  return {
    FormatVersion: 'aws_v1',
    PriceList: page.map((e) => JSON.stringify(e)),
    ...(next ? { NextToken: next } : {}),
  };
}
