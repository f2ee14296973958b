import { type FunctionProcess, type Reset, signal } from './lambda-emulator-parts';

/**
 * The function process of the emulated execution environment (lambda-emulator.ts): started by its
 * launcher — again for each fresh Init after a reset — and ended as Lambda ends one: SIGTERM, then
 * SIGKILL once the grace has passed.
 */
export class FunctionSlot {
  /** Whether the process is stopped (SIGSTOP): the environment is frozen. */
  frozen = false;
  private launcher: (() => FunctionProcess) | undefined;
  private process: FunctionProcess | undefined;

  /** Whether a process runs (started, and not ended by {@link end} nor by itself). */
  get running(): boolean {
    return this.process !== undefined;
  }

  /** Whether a process can be started (a launcher was given). */
  get launchable(): boolean {
    return this.launcher !== undefined;
  }

  /** Sets how a process is started. */
  use(launcher: () => FunctionProcess): void {
    this.launcher = launcher;
  }

  /** Starts a process; `byItself` is called if it ends other than by {@link end}. */
  start(byItself: (exit: Reset['exit']) => void): FunctionProcess {
    const proc = this.launcher!();
    this.process = proc;
    this.frozen = false;
    void proc.exited.then((exit) => {
      if (this.process !== proc) return;
      this.process = undefined;
      this.frozen = false;
      byItself(exit);
    });
    return proc;
  }

  /** Freezes the process (SIGSTOP); `false` when none runs or it is frozen already. */
  freeze(): boolean {
    const pid = this.process?.child.pid;
    if (pid === undefined || this.frozen || !signal(pid, 'SIGSTOP')) return false;
    this.frozen = true;
    return true;
  }

  /** Thaws the process (SIGCONT). */
  thaw(): void {
    const pid = this.process?.child.pid;
    if (!this.frozen || pid === undefined) return;
    this.frozen = false;
    signal(pid, 'SIGCONT');
  }

  kill(): void {
    const pid = this.process?.child.pid;
    if (pid !== undefined) signal(pid, 'SIGKILL');
  }

  /** Ends the process: SIGTERM (when `graceMs` > 0), then SIGKILL if it still runs `graceMs` later. */
  async end(graceMs: number): Promise<Pick<Reset, 'ended' | 'exit'>> {
    this.thaw();
    const proc = this.process;
    this.process = undefined;
    const pid = proc?.child.pid;
    if (!proc || pid === undefined) return { ended: 'exited' };
    if (graceMs > 0) signal(pid, 'SIGTERM');
    const inTime = await Promise.race([proc.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs))]);
    if (!inTime) signal(pid, 'SIGKILL');
    return { ended: inTime ? 'exited' : 'killed', exit: await proc.exited };
  }
}
