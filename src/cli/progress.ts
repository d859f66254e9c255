import cliProgress from 'cli-progress';

/**
 * Progress on stderr: a live bar on a terminal, a line every few seconds otherwise (logs, CI),
 * nothing with `quiet`. stdout stays free for results (`--json`).
 */
export class ProgressReporter {
  private bar: cliProgress.SingleBar | null = null;
  private lastLine = 0;

  constructor(private readonly quiet: boolean) {}

  start(label: string, total: number, value = 0, payload: Record<string, string> = {}): void {
    if (this.quiet) return;
    if (process.stderr.isTTY) {
      this.bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: `${label} [{bar}] {percentage}% {value}/{total} {status}`,
          hideCursor: true,
          clearOnComplete: false,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, value, { status: '', ...payload });
    } else {
      process.stderr.write(`${label}: 0/${total}\n`);
    }
  }

  update(value: number, status: string, total?: number): void {
    if (this.quiet) return;
    if (this.bar) {
      if (total !== undefined) this.bar.setTotal(total);
      this.bar.update(value, { status });
      return;
    }
    const now = Date.now();
    if (now - this.lastLine > 5000) {
      this.lastLine = now;
      process.stderr.write(`  ${value}${total !== undefined ? `/${total}` : ''} ${status}\n`);
    }
  }

  /** A message that must not be swallowed by the bar. */
  log(message: string): void {
    if (this.quiet) return;
    if (this.bar) {
      this.bar.stop();
      process.stderr.write(`${message}\n`);
      this.bar.start(this.bar.getTotal(), this.bar.getProgress() * this.bar.getTotal(), {
        status: '',
      });
    } else {
      process.stderr.write(`${message}\n`);
    }
  }

  stop(): void {
    this.bar?.stop();
    this.bar = null;
  }
}
