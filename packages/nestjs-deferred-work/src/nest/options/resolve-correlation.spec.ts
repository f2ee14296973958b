import { Correlator } from '../../capture/correlation';
import { requestIdOf, resolveCorrelation } from './resolve-correlation';

describe('resolveCorrelation', () => {
  it("defaults to OpenTelemetry 'auto' and req.id (pino-http, Fastify) as the request id; false turns it off; header names are lower-cased", () => {
    expect(resolveCorrelation(undefined)).toEqual({ openTelemetry: 'auto', requestId: requestIdOf });
    expect(resolveCorrelation({ openTelemetry: false })).toEqual({ openTelemetry: false, requestId: requestIdOf });
    expect(requestIdOf({ id: 'req-7' })).toBe('req-7');
    expect(requestIdOf({ id: 12 })).toBe('12');
    expect(requestIdOf({ id: { nested: true } })).toBeUndefined();
    expect(requestIdOf({})).toBeUndefined();
    expect(resolveCorrelation(false)).toBeUndefined();
    expect(resolveCorrelation({ requestIdHeader: 'X-Request-Id' })).toMatchObject({ requestIdHeader: 'x-request-id', openTelemetry: 'auto' });
  });

  it.each([
    [{ requestIdHeader: 'x request id' }, /correlation\.requestIdHeader.*is not a header name.*'x-request-id'/],
    [{ requestId: 'x-request-id' }, /correlation\.requestId.*expected a function.*requestIdHeader/],
    [{ requestIdHeader: 'x-request-id', requestId: () => 'a' }, /both requestIdHeader and requestId are given/],
    [{ openTelemetry: 'yes' }, /correlation\.openTelemetry.*expected true, false or 'auto'/],
  ])('refuses %j with the fix', (option, message) => {
    expect(() => resolveCorrelation(option as never)).toThrow(message);
  });
});

describe('Correlator', () => {
  const failing = () => Promise.reject(new Error("Cannot find package '@opentelemetry/api'"));

  it("with openTelemetry true, fails when @opentelemetry/api cannot be loaded; with 'auto', carries on without it", async () => {
    await expect(new Correlator({ openTelemetry: true }).init(failing)).rejects.toThrow(/cannot be loaded \(Cannot find package/);
    const auto = new Correlator({ openTelemetry: 'auto' });
    await auto.init(failing);
    expect(auto.active).toBe(false);
  });

  it('reads the request id from the header or the function; a throwing function gives no id', () => {
    const byHeader = new Correlator({ requestIdHeader: 'x-request-id', openTelemetry: false });
    expect(byHeader.forRequest({ headers: { 'x-request-id': 'r-1' } })?.correlation).toEqual({ requestId: 'r-1' });
    expect(byHeader.forRequest({ headers: {} })).toBeUndefined();
    const byFunction = new Correlator({ requestId: (req) => (req as { id: string }).id, openTelemetry: false });
    expect(byFunction.forRequest({ id: 'r-2' })?.correlation).toEqual({ requestId: 'r-2' });
    const throwing = new Correlator({ requestId: () => { throw new Error('no'); }, openTelemetry: false });
    expect(throwing.forRequest({})).toBeUndefined();
  });
});
