/**
 * @file Opening and building an index store from a location string: a plain folder path is the
 * hnswlib store (hnsw-store.ts), `lance:<folder>` the LanceDB store (lance-store.ts). `dml index` and
 * `dml serve` go through these two functions and the {@link IndexStore} interface only.
 */
import { invalidParameterError } from '../errors.js';
import { LANCE_PREFIX, type IndexStore, type IndexStoreKind, type OpenIndexStoreOptions } from './index-store.js';
import { LanceIndexStore, type LanceAnnParams } from './lance-store.js';
import type { CreateIndexInit } from './layout.js';
import { SearchIndexStore } from './hnsw-store.js';

/** Which store a location names, and its folder. Errors: E_ARG for an empty folder after `lance:`. */
export function parseIndexLocation(location: string, name = 'location'): { kind: IndexStoreKind; dir: string } {
  if (typeof location !== 'string' || location === '') throw invalidParameterError(name, `a folder path or ${LANCE_PREFIX}<folder>`, location);
  if (!location.startsWith(LANCE_PREFIX)) return { kind: 'hnsw', dir: location };
  const dir = location.slice(LANCE_PREFIX.length);
  if (dir === '') throw invalidParameterError(name, `a folder after ${LANCE_PREFIX}`, location);
  return { kind: 'lance', dir };
}

/**
 * Opens the index at `location` (see the file comment). Options that concern the other kind of store
 * are ignored: `snapshotEvery` is the hnswlib store's, `refreshSeconds` and `compactEvery` the LanceDB store's.
 */
export async function openIndexStore(location: string, options: OpenIndexStoreOptions = {}): Promise<IndexStore> {
  const { kind, dir } = parseIndexLocation(location);
  const writable = options.writable ?? false;
  if (kind === 'lance') {
    return LanceIndexStore.open(dir, {
      writable,
      ...(options.refreshSeconds !== undefined ? { refreshSeconds: options.refreshSeconds } : {}),
      ...(options.compactEvery !== undefined ? { compactEvery: options.compactEvery } : {}),
    });
  }
  return SearchIndexStore.open(dir, { writable, ...(options.snapshotEvery !== undefined ? { snapshotEvery: options.snapshotEvery } : {}) });
}

/**
 * What {@link createIndexStore} builds an index from: the hnswlib store's input, plus the LanceDB
 * store's ANN parameters and, optionally, where its table goes (`lanceTable`, see `LanceIndexMetadata.table`).
 */
export type CreateIndexStoreInit = CreateIndexInit & { ann: LanceAnnParams; lanceTable?: string | undefined };

/** Builds a new index at `location` (a folder that must not exist or be empty) with the store the location names. */
export async function createIndexStore(location: string, init: CreateIndexStoreInit): Promise<void> {
  const { kind, dir } = parseIndexLocation(location);
  const { ann, hnsw, lanceTable, ...common } = init;
  if (kind === 'lance') await LanceIndexStore.create(dir, { ...common, ann, table: lanceTable });
  else if (lanceTable !== undefined) throw invalidParameterError('lanceTable', `no table location for an hnswlib index (only ${LANCE_PREFIX}<folder> locations have one)`, lanceTable);
  else await SearchIndexStore.create(dir, { ...common, hnsw });
}
