/** Resolves on the next turn of the event loop, after the I/O that is ready now. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Sends the pieces `0 … count - 1` of one large write in order, each started a turn of the event loop
 * after the previous one (`setImmediate`), at most `inFlight` at once: the next piece is built while
 * the previous one is on the wire, and the requests that arrived meanwhile are served in between two
 * pieces instead of waiting behind the whole write. `send` records its piece's outcome itself; should it
 * throw or reject, `failed(piece, error)` records that piece's failure and the other pieces go on.
 * Never rejects; resolves once every piece has settled. One piece is sent at once, without a turn.
 */
export async function inTurns(count: number, inFlight: number, send: (piece: number) => Promise<void>, failed: (piece: number, error: unknown) => void): Promise<void> {
  const start = (piece: number): Promise<void> => {
    let sent: Promise<void>;
    try {
      sent = send(piece);
    } catch (error) {
      sent = Promise.reject(error);
    }
    return sent.catch((error: unknown) => failed(piece, error));
  };
  if (count === 1) return start(0);
  const running: Array<Promise<void>> = [];
  for (let piece = 0; piece < count; piece++) {
    if (piece >= inFlight) await running[piece - inFlight];
    if (piece > 0) await nextTurn();
    running.push(start(piece));
  }
  await Promise.all(running);
}
