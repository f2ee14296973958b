import { connectionFromUrl } from './bullmq.worker-sink';

describe('connectionFromUrl (BullMqSink.offloaded connection strings)', () => {
  it('reads host, port, credentials, database and TLS from a redis URL', () => {
    expect(connectionFromUrl('redis://127.0.0.1:6380')).toEqual({ host: '127.0.0.1', port: 6380 });
    expect(connectionFromUrl('rediss://user:p%40ss@cache.example.com:6390/3')).toEqual({
      host: 'cache.example.com',
      port: 6390,
      username: 'user',
      password: 'p@ss',
      db: 3,
      tls: {},
    });
  });
});
