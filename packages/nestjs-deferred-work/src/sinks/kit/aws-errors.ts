import { failureCode } from './failure-codes';

/**
 * AWS error codes that mean "not now": the service throttled the call or failed inside. Sent again
 * later, the same entry goes through. (SQS, SNS and the KMS key behind an encrypted queue or topic.)
 */
const TRANSIENT = new Set([
  'Throttling',
  'Throttled',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'SlowDown',
  'KmsThrottled',
  'KMS.ThrottlingException',
  'KMSThrottling',
  'KMSThrottlingException',
  'LimitExceededException',
  'BandwidthLimitExceeded',
  'InternalError',
  'InternalFailure',
  'InternalErrorException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  // Credentials that expired (a role's session, a token the SDK's chain refreshes) or a request signed
  // with a clock the SDK corrects: the next call signs with fresh ones.
  'ExpiredToken',
  'ExpiredTokenException',
  'RequestExpired',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
]);

/**
 * AWS error codes of a whole batch call that one entry can cause (a bad attribute, an entry too
 * large): the call is split to find that entry, and the rest are sent. Any other refusal (the queue
 * does not exist, access denied) is about the destination and fails every entry of the call.
 */
const ENTRY_CODES = new Set([
  'InvalidParameterValue',
  'InvalidParameterValueException',
  'ParameterValueInvalid',
  'InvalidParameter',
  'InvalidParameterException',
  'InvalidAttributeName',
  'InvalidAttributeValue',
  'InvalidMessageContents',
  'InvalidBatchEntryId',
  'BatchEntryIdsNotDistinct',
  'BatchRequestTooLong',
  'AWS.SimpleQueueService.BatchRequestTooLong',
  'AWS.SimpleQueueService.InvalidBatchEntryId',
  'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
  'BatchRequestTooLongException',
  'InvalidBatchEntryIdException',
  'BatchEntryIdsNotDistinctException',
  'ValidationError',
  'ValidationException',
]);

/** What an AWS error says: its code, and whether sending again can help. */
export interface AwsVerdict {
  code?: string;
  retryable: boolean;
}

/** What the AWS SDK puts on the errors it throws (`ServiceException`). */
interface SdkErrorFields {
  name?: string;
  Code?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $retryable?: { throttling?: boolean };
  $metadata?: { httpStatusCode?: number };
}

/**
 * What an error thrown by an AWS SDK call means: its code (AWS's error code as the service sent it,
 * e.g. `AWS.SimpleQueueService.NonExistentQueue` — the SDK's `QueueDoesNotExist` — or `Throttled`,
 * SNS's `ThrottledException`) and whether it is worth retrying. Both the code and the SDK's exception
 * name are read: the SDK puts the service's code in `Code` and its own name for the exception in
 * `name`, and the two differ for many errors. Transient: throttling (either name, or HTTP 429), the
 * service's internal errors and any 5xx (the app's SDK client has already retried these on its own
 * within the call), and anything that is not an AWS answer (a connection refused or reset, a timeout).
 * Permanent: any other client fault (4xx) — the service refused the call and will refuse it again.
 * An error that is not an AWS answer keeps its own code (`ECONNREFUSED`, `ECONNRESET`; `ETIMEDOUT` for
 * the SDK's `TimeoutError`, which carries none).
 */
export function awsError(error: unknown): AwsVerdict {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorFields;
  const name = sdkName(e);
  const code = e.Code ?? (typeof e.code === 'string' ? e.code : undefined) ?? name ?? failureCode(error);
  const status = e.$metadata?.httpStatusCode;
  const throttledOrFailing =
    isOneOf(TRANSIENT, code, name) || e.$retryable?.throttling === true || e.$fault === 'server' || (status !== undefined && (status === 429 || status >= 500));
  if (throttledOrFailing) return { code, retryable: true };
  if (e.$fault === 'client') return { code, retryable: false };
  return { code, retryable: true };
}

/** The SDK's name for an error the service answered with (`undefined` for any other error, e.g. a reset connection). */
function sdkName(e: SdkErrorFields | null | undefined): string | undefined {
  return e && (e.$fault !== undefined || e.$metadata !== undefined) ? e.name : undefined;
}

/** Whether the error's code or the SDK's name for it is in `codes`. */
function isOneOf(codes: ReadonlySet<string>, code: string | undefined, name: string | undefined): boolean {
  return (code !== undefined && codes.has(code)) || (name !== undefined && codes.has(name));
}

/**
 * Whether a batch call the service refused as a whole may have been refused because of one entry:
 * then it is split to send the others. Throttling, 5xx and refusals about the destination are not.
 */
export function awsEntryMayCause(error: unknown): boolean {
  const { code, retryable } = awsError(error);
  return !retryable && isOneOf(ENTRY_CODES, code, sdkName(error as SdkErrorFields | null | undefined));
}

/** One entry of a batch answer's `Failed` list (SQS `SendMessageBatch`, SNS `PublishBatch`). */
export interface AwsFailedEntry {
  Id?: string;
  Code?: string;
  Message?: string;
  SenderFault?: boolean;
}

/**
 * What an entry the service listed as failed means: the sender's fault (`SenderFault: true`, e.g.
 * `InvalidParameterValue`) is permanent for the entry, unless its code is a throttling or internal
 * error; the service's own fault (`SenderFault: false`) is transient.
 */
export function awsFailedEntry(entry: AwsFailedEntry): AwsVerdict {
  const code = entry.Code || undefined;
  return { code, retryable: (code !== undefined && TRANSIENT.has(code)) || entry.SenderFault !== true };
}
