/**
 * @file Progress bars on stderr (cli-progress). Disabled when stderr is not a terminal, when the `CI`
 * environment variable is set, or after {@link silenceProgress} (`dml --quiet`), so logs and pipes
 * stay clean.
 */
import cliProgress from 'cli-progress';

/** A progress reporter: call `update(done, total)` as work advances and `stop()` at the end. */
export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

let silenced = false;

/** Draws no progress bars from now on in this process (`dml --quiet`). */
export function silenceProgress(): void {
  silenced = true;
}

/** True when progress bars should be drawn. */
export function progressEnabled(): boolean {
  return !silenced && Boolean(process.stderr.isTTY) && !process.env['CI'];
}

const silent: Progress = { update: () => undefined, stop: () => undefined };

/** A bar labelled `label`, or a no-op reporter when bars are disabled. */
export function createProgress(label: string, enabled = progressEnabled()): Progress {
  if (!enabled) return silent;
  let bar: cliProgress.SingleBar | undefined;
  return {
    update(done, total) {
      if (!bar) {
        bar = new cliProgress.SingleBar(
          { stream: process.stderr, format: `${label.padEnd(18)} [{bar}] {value}/{total} {percentage}% eta {eta_formatted}`, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, done);
      } else {
        bar.setTotal(total);
        bar.update(done);
      }
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}
