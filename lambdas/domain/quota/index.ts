/**
 * Tenancy, quotas and admission (docs/reference/quota-semantics.md): the pure domain the store and the API call.
 */
export { Accounting, type ScopeFigures, scopeFigures } from './accounting';
export {
  type AdmittedEvent,
  checkStart,
  type DecideInput,
  type DecideOptions,
  type Decision,
  decide,
  type ReleasedEvent,
  type ScopeSummary,
  type StartCheck,
} from './admission';
export {
  type CapacityInput,
  type CapacityView,
  capacityView,
  type ModelStatus,
  modelStatus,
  type ScopeCapacity,
} from './capacity';
export { membersIssues, planMembers } from './members';
export {
  amount,
  assertQuotaWrite,
  checkQuotaWrite,
  type Quota,
  QuotaBook,
  type QuotaIssue,
  type QuotaSpec,
  QuotaSpecSchema,
  type QuotaWrite,
  type QuotaWriteResult,
  sameQuota,
  validateQuotas,
} from './quota';
export {
  type AdmissionAsSeen,
  admissionAsSeen,
  type Reader,
  type TakesBackLine,
  takesBackAsSeen,
} from './telling';
export {
  MAX_MEMBERS_PER_SCOPE,
  type MemberWrite,
  planMemberWrite,
  type Scope,
  type ScopeKind,
  ScopeTree,
  scopeKind,
  validateScopeCreate,
  validateScopeDelete,
} from './tenancy';
export * from './types';
