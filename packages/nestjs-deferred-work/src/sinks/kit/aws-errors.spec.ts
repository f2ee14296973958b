import { awsEntryMayCause, awsError, awsFailedEntry } from './aws-errors';

/** An error as the AWS SDK throws it (a `ServiceException`). */
const sdkError = (name: string, fault: 'client' | 'server', status: number) => Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status } });

/** A client fault of a service the SDK reads AWS Query error codes of: the code in `Code`, the SDK's exception name in `name`. */
const queryError = (name: string, code: string, status: number) =>
  Object.assign(new Error(name), { name, Code: code, Error: { Code: code, Type: 'Sender' }, $fault: 'client' as const, $metadata: { httpStatusCode: status } });

describe('awsError', () => {
  it.each([
    [sdkError('Throttling', 'client', 400), 'Throttling', true],
    [sdkError('RequestThrottled', 'client', 400), 'RequestThrottled', true],
    [sdkError('KmsThrottled', 'client', 400), 'KmsThrottled', true],
    [sdkError('InternalError', 'server', 500), 'InternalError', true],
    [sdkError('SomethingNew', 'server', 503), 'SomethingNew', true],
    [sdkError('QueueDoesNotExist', 'client', 400), 'QueueDoesNotExist', false],
    [sdkError('AccessDenied', 'client', 403), 'AccessDenied', false],
    [sdkError('InvalidParameterValue', 'client', 400), 'InvalidParameterValue', false],
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'ECONNREFUSED', true],
    [new Error('socket hang up'), undefined, true],
    // As the SDK throws them: AWS's code in `Code`, the SDK's own name for the exception in `name`.
    [queryError('ThrottledException', 'Throttled', 429), 'Throttled', true], // SNS
    [queryError('KmsThrottled', 'KMS.ThrottlingException', 400), 'KMS.ThrottlingException', true], // SQS
    [queryError('KMSThrottlingException', 'KMSThrottling', 400), 'KMSThrottling', true], // SNS
    [queryError('QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 400), 'AWS.SimpleQueueService.NonExistentQueue', false],
    [queryError('SomethingNew', 'SomethingNew', 429), 'SomethingNew', true],
    [queryError('ExpiredToken', 'ExpiredToken', 403), 'ExpiredToken', true], // refreshed by the SDK's chain for the next call
    [queryError('InvalidClientTokenId', 'InvalidClientTokenId', 403), 'InvalidClientTokenId', false],
  ])('%s → code %s, retryable %s', (error, code, retryable) => {
    expect(awsError(error)).toEqual({ code, retryable });
  });

  it('splits a call only for refusals one entry can cause', () => {
    expect(awsEntryMayCause(sdkError('BatchRequestTooLong', 'client', 400))).toBe(true);
    expect(awsEntryMayCause(sdkError('InvalidParameterValue', 'client', 400))).toBe(true);
    expect(awsEntryMayCause(sdkError('QueueDoesNotExist', 'client', 400))).toBe(false);
    expect(awsEntryMayCause(sdkError('Throttling', 'client', 400))).toBe(false);
    expect(awsEntryMayCause(sdkError('InternalError', 'server', 500))).toBe(false);
    // SNS: InvalidParameterValueException is sent as ParameterValueInvalid
    expect(awsEntryMayCause(queryError('InvalidParameterValueException', 'ParameterValueInvalid', 400))).toBe(true);
    expect(awsEntryMayCause(queryError('SomeSdkName', 'InvalidParameterValue', 400))).toBe(true);
    expect(awsEntryMayCause(queryError('QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 400))).toBe(false);
  });
});

describe('awsFailedEntry', () => {
  it("the sender's fault is permanent, the service's fault and throttling are not", () => {
    expect(awsFailedEntry({ Id: 'a', Code: 'InvalidParameterValue', SenderFault: true })).toEqual({ code: 'InvalidParameterValue', retryable: false });
    expect(awsFailedEntry({ Id: 'a', Code: 'InternalError', SenderFault: false })).toEqual({ code: 'InternalError', retryable: true });
    expect(awsFailedEntry({ Id: 'a', Code: 'ThrottlingException', SenderFault: true })).toEqual({ code: 'ThrottlingException', retryable: true });
    expect(awsFailedEntry({ Id: 'a' })).toEqual({ code: undefined, retryable: true });
  });
});
