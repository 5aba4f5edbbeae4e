/** DynamoDB's TransactWriteItems holds at most 100 items (docs/reference/aws-semantics.md). */
export const TRANSACTION_MAX_ITEMS = 100;

/** What one admission transaction may write besides the admitter's fence, which is always one of its items. */
export const ADMISSION_MAX_ITEMS = TRANSACTION_MAX_ITEMS - 1;
