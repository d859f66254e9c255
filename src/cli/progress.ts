import cliProgress from 'cli-progress';
import type { StageProgress } from '../trainer/trainer.js';

/**
 * Progress on stderr: a live bar with an ETA on a terminal, a labelled line every few seconds
 * otherwise (logs, CI), nothing with `quiet`. stdout stays free for results (`--json`).
 */
export class ProgressReporter {
  private bar: cliProgress.SingleBar | null = null;
  private lastLine = 0;
  private unit = '';

  constructor(
    private readonly quiet: boolean,
    private readonly terminal: boolean = Boolean(process.stderr.isTTY),
    private readonly write: (text: string) => void = (text) => process.stderr.write(text),
  ) {}

  /** `unit` names what the bar counts (`tokens`, `steps`), for the lines without a bar. */
  start(label: string, total: number, value = 0, unit = ''): void {
    if (this.quiet) return;
    this.unit = unit;
    if (this.terminal) {
      this.bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: `${label} [{bar}] {percentage}% | ETA {eta_formatted} | {status}`,
          hideCursor: true,
          clearOnComplete: false,
          etaBuffer: 20,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, value, { status: '' });
    } else {
      this.write(`${label}: ${this.count(value, total)}\n`);
    }
  }

  private count(value: number, total: number | undefined): string {
    const amount = (n: number) => n.toLocaleString('en-US');
    return `${amount(value)}${total === undefined ? '' : `/${amount(total)}`}${this.unit ? ` ${this.unit}` : ''}`;
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
      this.write(`  ${status}, ${this.count(value, total)}\n`);
    }
  }

  /** A message that must not be swallowed by the bar. */
  log(message: string): void {
    if (this.quiet) return;
    if (this.bar) {
      this.bar.stop();
      this.write(`${message}\n`);
      this.bar.start(this.bar.getTotal(), this.bar.getProgress() * this.bar.getTotal(), {
        status: '',
      });
    } else {
      this.write(`${message}\n`);
    }
  }

  stop(): void {
    this.bar?.stop();
    this.bar = null;
  }
}

/** The stages the run will take at its pace so far (the budget is in tokens, not stages). */
export function estimatedStages(event: StageProgress): number {
  if (event.generatedTokens <= 0) return event.stage;
  return Math.max(event.stage, Math.ceil((event.stage * event.budget) / event.generatedTokens));
}

/** `stage 12/~224 reward 0.352 token-KL 7.9e-3 updates 3 out-of-region 0`: every figure named. */
export function stageStatus(event: StageProgress): string {
  const total = estimatedStages(event);
  return [
    `stage ${event.stage}/${total === event.stage ? '' : '~'}${total}`,
    `reward ${event.reward.toFixed(3)}`,
    `token-KL ${event.meanKl.toExponential(1)}`,
    `updates ${event.updates}`,
    `out-of-region ${event.outOfRegion}`,
    ...(event.regression ? ['REGRESSION'] : []),
  ].join(' ');
}
