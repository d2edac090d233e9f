/**
 * @file Thumbnails of the report's retrieval examples, as `data:` URIs, so report.html stays one
 * self-contained file. Made from the manifest's image sources with the same decoder as the evaluation.
 */
import type { ImageSource } from '../data/manifest.js';
import { decodeImageSource } from '../image/decode.js';
import { rawInput } from '../image/raw-image.js';
import type { Report } from './report.js';

/** Options of {@link exampleThumbnails}. */
export interface ThumbnailOptions {
  /** Longest side of a thumbnail in pixels. Default 96. */
  size?: number;
  /** Decompression-bomb guard, as for the evaluation (decode.ts's default when absent). */
  limitInputPixels?: number | undefined;
}

/**
 * JPEG thumbnails (fitted inside `size` x `size`, never enlarged past 4x) of every query and neighbour
 * of the report's examples, keyed by item id. Ids without a source, or whose image no longer decodes,
 * get none (the page then shows the id in a box).
 */
export async function exampleThumbnails(report: Report, sources: ReadonlyMap<string, ImageSource>, options: ThumbnailOptions = {}): Promise<Map<string, string>> {
  const size = options.size ?? 96;
  const ids = new Set(report.runs.flatMap((run) => run.examples.flatMap((e) => [e.query.id, ...e.neighbours.map((n) => n.id)])));
  const thumbnails = new Map<string, string>();
  for (const id of ids) {
    const source = sources.get(id);
    if (source === undefined) continue;
    try {
      const image = await decodeImageSource(source, { channels: 3, limitInputPixels: options.limitInputPixels });
      const side = Math.min(size, 4 * Math.max(image.width, image.height));
      const jpeg = await rawInput(image).resize(side, side, { fit: 'inside' }).jpeg({ quality: 80 }).toBuffer();
      thumbnails.set(id, `data:image/jpeg;base64,${jpeg.toString('base64')}`);
    } catch {
      // The evaluation decoded it (or skipped it with --skip-bad-images); a thumbnail is not worth failing the report for.
    }
  }
  return thumbnails;
}
