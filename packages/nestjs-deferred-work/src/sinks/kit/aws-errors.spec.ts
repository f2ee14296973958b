import { awsEntryMayCause, awsError, awsFailedEntry } from './aws-errors';

/** An error as the AWS SDK throws it (a `ServiceException`). */
const sdkError = (name: string, fault: 'client' | 'server', status: number) => Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status } });

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
  ])('%s → code %s, retryable %s', (error, code, retryable) => {
    expect(awsError(error)).toEqual({ code, retryable });
  });

  it('splits a call only for refusals one entry can cause', () => {
    expect(awsEntryMayCause(sdkError('BatchRequestTooLong', 'client', 400))).toBe(true);
    expect(awsEntryMayCause(sdkError('InvalidParameterValue', 'client', 400))).toBe(true);
    expect(awsEntryMayCause(sdkError('QueueDoesNotExist', 'client', 400))).toBe(false);
    expect(awsEntryMayCause(sdkError('Throttling', 'client', 400))).toBe(false);
    expect(awsEntryMayCause(sdkError('InternalError', 'server', 500))).toBe(false);
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
