/**
 * @file Shared by the spec/data specs: the fixture folder (written by
 * scripts/fixtures/make_dataset_fixtures.py), scratch copies for the error cases, a warning
 * collector.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { LayoutReadOptions } from '../../lib/data/layout-support.js';
import type { ManifestItem } from '../../lib/data/manifest.js';

/** Absolute path of `spec/fixtures/datasets/<parts>`. */
export function fixture(...parts: string[]): string {
  return resolve('spec/fixtures/datasets', ...parts);
}

/** A scratch folder removed after each test of the calling `describe`. */
export function useScratchFolder(): { path: (...parts: string[]) => string; copyFixture: (...parts: string[]) => string } {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dml-data-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  return {
    path: (...parts) => join(dir, ...parts),
    /** Copies `spec/fixtures/datasets/<parts>` into the scratch folder and returns the copy's path. */
    copyFixture: (...parts) => {
      const target = join(dir, ...parts);
      cpSync(fixture(...parts), target, { recursive: true });
      return target;
    },
  };
}

/** Layout options whose warnings land in `warnings`. */
export function collectingOptions(): LayoutReadOptions & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (message) => warnings.push(message), hotelsTestSet: 'unoccluded' };
}

/** `[id, label, split, isQuery, isGallery]` per item: compact rows for deep-equal assertions. */
export function itemRows(items: ManifestItem[]): Array<[string, string, string, boolean, boolean]> {
  return items.map((i) => [i.id, i.label, i.split, i.isQuery, i.isGallery]);
}
