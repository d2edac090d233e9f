/**
 * @file The Manifest: the one in-memory description of a labelled image collection that every dataset
 * layout parser produces and everything downstream (image pipeline, embedder, evaluator, trainer)
 * consumes.
 */

/** Where the pixels of one item come from. */
export type ImageSource =
  /** An encoded image file (JPEG, PNG, WebP, ...) decoded with sharp. Absolute path. */
  | { kind: 'file'; path: string }
  /**
   * One image of an IDX image file (MNIST layout: uint8, rows x cols, one channel).
   * `file` is the absolute path of the `*-images-idx3-ubyte[.gz]` file, `index` the image's position.
   */
  | { kind: 'idx'; file: string; index: number };

/** One labelled image. */
export interface ManifestItem {
  /** Unique, stable id within the manifest (e.g. the path relative to the dataset root). */
  id: string;
  source: ImageSource;
  /** Class label as a string (folder name, class id, product id). */
  label: string;
  /** Split name: `'train'` or `'test'` for the standard layouts; free-form for CSV/JSONL manifests. */
  split: string;
  /** True if the item is a query in the evaluation protocol. */
  isQuery: boolean;
  /** True if the item belongs to the gallery (the retrieval database) in the evaluation protocol. */
  isGallery: boolean;
}

/** A parsed dataset. */
export interface Manifest {
  /** Layout name the manifest was read with (`folder`, `csv`, `cub`, ...). */
  layout: string;
  /** Absolute path of the dataset root (folder or file) the layout was read from. */
  root: string;
  /**
   * Protocol note for reports, e.g. `"CUB-200-2011: classes 101-200, query set = gallery set"`.
   */
  protocol: string;
  /** Recall@K values this dataset's protocol reports by default (e.g. [1,2,4,8] for CUB). */
  defaultK: number[];
  items: ManifestItem[];
  /** Display names of labels where the dataset has them (Fashion-MNIST's, Cars196's `class_names`); reports show them. */
  classNames?: Record<string, string>;
}
