/**
 * @file Progress of long work on stderr. On a terminal (without the `CI` environment variable): a bar
 * (cli-progress) with done/total, rate and ETA. Elsewhere (CI, `nohup`, a pipe, a log file): one plain
 * line per stage every 10% or every 30 s, whichever comes first (stage, done/total, rate, ETA), and a
 * last line when the stage ends; stages shorter than a second print nothing. After
 * {@link silenceProgress} (`dml --quiet`): nothing.
 */
import cliProgress from 'cli-progress';

/** A progress reporter: call `update(done, total)` as work advances and `stop()` at the end. */
export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

/** How progress is shown: a redrawn bar, plain lines, or not at all. */
export type ProgressMode = 'bar' | 'lines' | 'none';

let silenced = false;

/** Shows no progress from now on in this process (`dml --quiet`); `false` undoes it (for tests). */
export function silenceProgress(silence = true): void {
  silenced = silence;
}

/** The mode for this process: none after `--quiet`, a bar on a terminal without `CI`, else lines. */
export function progressMode(): ProgressMode {
  if (silenced) return 'none';
  return process.stderr.isTTY && !process.env['CI'] ? 'bar' : 'lines';
}

/** True when progress bars are drawn (see {@link progressMode}). */
export function progressEnabled(): boolean {
  return progressMode() === 'bar';
}

/** Seconds as `45s`, `3m05s` or `2h07m`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Seconds as `0.4s`, `12.3s` under a minute, else as {@link formatDuration}. */
export function formatSeconds(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)}s` : formatDuration(seconds);
}

/** Items per second as `1234/s`, `12.3/s` or `0.12/s`. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return '--/s';
  return `${perSecond >= 100 ? Math.round(perSecond) : perSecond >= 1 ? perSecond.toFixed(1) : perSecond.toFixed(2)}/s`;
}

/**
 * The ETA of `done` of `total` after `elapsed` seconds, as text: `--` until there is a rate to go by
 * (nothing done yet, or under a second), so a bar never starts with a wrong "eta 0s".
 */
export function etaText(done: number, total: number, elapsed: number): string {
  if (done <= 0 || elapsed < 1) return '--';
  return formatDuration(((total - done) * elapsed) / done);
}

/** Where lines go and what time it is (both replaceable for tests). */
export interface ProgressIo {
  write?: (line: string) => void;
  /** Milliseconds, monotonic. */
  now?: () => number;
}

const silent: Progress = { update: () => undefined, stop: () => undefined };

/** A reporter for stage `label` in `mode` (default: this process's {@link progressMode}). */
export function createProgress(label: string, mode: ProgressMode = progressMode(), io: ProgressIo = {}): Progress {
  if (mode === 'none') return silent;
  const now = io.now ?? (() => performance.now());
  return mode === 'bar' ? barProgress(label, now) : lineProgress(label, now, io.write ?? ((line) => process.stderr.write(`${line}\n`)));
}

function barProgress(label: string, now: () => number): Progress {
  let bar: cliProgress.SingleBar | undefined;
  let start = 0;
  const payload = (done: number, total: number): { rate: string; eta: string } => {
    const elapsed = (now() - start) / 1000;
    return { rate: elapsed >= 1 ? formatRate(done / elapsed) : '--/s', eta: etaText(done, total, elapsed) };
  };
  return {
    update(done, total) {
      if (!bar) {
        start = now();
        bar = new cliProgress.SingleBar(
          { stream: process.stderr, format: `${label.padEnd(18)} [{bar}] {value}/{total} {percentage}% {rate} eta {eta}`, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, done, payload(done, total));
      } else {
        bar.setTotal(total);
        bar.update(done, payload(done, total));
      }
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}

/** Lines: every 10% or 30 s once the stage has run a second, and a last line at the end. */
function lineProgress(label: string, now: () => number, write: (line: string) => void): Progress {
  let start: number | undefined;
  let lastLine = 0;
  let lastDecile = 0;
  let ended = false;
  let latest = { done: 0, total: 0 };
  const line = (done: number, total: number, t: number): string => {
    const elapsed = (t - (start as number)) / 1000;
    const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
    return done >= total
      ? `${label}: ${done}/${total} done in ${formatSeconds(elapsed)} (${formatRate(done / elapsed)})`
      : `${label}: ${done}/${total} (${pct}%), ${formatRate(done / elapsed)}, eta ${etaText(done, total, elapsed)}`;
  };
  return {
    update(done, total) {
      const t = now();
      if (start === undefined) {
        start = t;
        lastLine = t;
      }
      latest = { done, total };
      if (done >= total) {
        if (!ended && t - start >= 1000) write(line(done, total, t));
        ended = true;
        return;
      }
      ended = false;
      const decile = total > 0 ? Math.floor((10 * done) / total) : 0;
      if (t - start >= 1000 && (decile > lastDecile || t - lastLine >= 30_000)) {
        write(line(done, total, t));
        lastLine = t;
      }
      lastDecile = Math.max(lastDecile, decile);
    },
    stop() {
      const t = now();
      if (!ended && start !== undefined && t - start >= 1000 && latest.total > 0) write(line(latest.done, latest.total, t));
      ended = true;
    },
  };
}
