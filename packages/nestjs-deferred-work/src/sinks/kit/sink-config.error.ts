/**
 * Thrown by a sink's constructor when its options are invalid; the message names the sink and the
 * option and says how to fix it. A `TypeError`, as sinks threw before it existed.
 */
export class SinkConfigError extends TypeError {
  override readonly name = 'SinkConfigError';

  constructor(
    message: string,
    /** The offending option, e.g. `url` or `queues.mail`, when there is one. */
    readonly option?: string,
  ) {
    super(message);
  }
}
