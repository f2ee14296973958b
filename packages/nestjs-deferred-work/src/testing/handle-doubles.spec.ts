import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InjectDeferredClient, InjectDeferredMetric, InjectDeferredQueue } from '../nest/handles/inject-handles';
import type { DeferredMetricHandle } from '../nest/handles/deferred-metric.handle';
import { DeferredHandleDoubles } from './handle-doubles';

@Injectable()
class MailService {
  constructor(
    @InjectDeferredQueue('mail') private readonly mail: { add(name: string, data: unknown, opts?: object): Promise<{ id: string }> },
    @InjectDeferredClient('EVENTS') private readonly events: { emit(pattern: string, data: unknown): unknown },
    @InjectDeferredMetric('welcomes') private readonly welcomes: DeferredMetricHandle,
  ) {}

  async welcome(user: string): Promise<string> {
    const job = await this.mail.add('welcome', { user }, { attempts: 3 });
    this.events.emit('user.welcomed', { user });
    this.welcomes.inc({ channel: 'web' });
    return job.id;
  }
}

describe('DeferredHandleDoubles', () => {
  it('stand in for the handles in a unit test, without DeferredWorkModule, and record the calls', async () => {
    const doubles = new DeferredHandleDoubles();
    const moduleRef = await Test.createTestingModule({
      providers: [MailService, ...doubles.providers({ queues: ['mail'], clients: ['EVENTS'], metrics: ['welcomes'] })],
    }).compile();
    const id = await moduleRef.get(MailService).welcome('u1');
    expect(doubles.jobs).toEqual([
      { kind: 'job', id, queue: 'mail', name: 'welcome', data: { user: 'u1' }, opts: { attempts: 3 } },
      expect.objectContaining({ queue: 'EVENTS', name: 'user.welcomed', data: { user: 'u1' }, opts: { sink: 'EVENTS' } }),
    ]);
    expect(doubles.metrics).toEqual([expect.objectContaining({ name: 'welcomes', value: 1, tags: { channel: 'web' } })]);
    doubles.logger('Ctx').log('hello', { a: 1 });
    expect(doubles.logs).toEqual([expect.objectContaining({ level: 'log', message: 'hello', fields: { a: 1 }, opts: { context: 'Ctx' } })]);
  });
});
