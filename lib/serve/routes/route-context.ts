/**
 * @file What the service's route plugins (search-routes.ts, item-routes.ts, service-routes.ts) are
 * registered with: the open index, the inference workers, the route schemas, the limits, and the
 * metrics the service keeps. app.ts builds it once.
 */
import type { IndexStore } from '../../index-store/index-store.js';
import type { ProviderChoice } from '../../onnx/devices.js';
import type { RequestMetrics } from '../metrics.js';
import type { ServiceMetrics } from '../prometheus.js';
import type { routeSchemas } from '../schemas.js';
import type { InferenceWorkerPool } from '../worker-pool.js';

/** The shared state of the routes. */
export interface RouteContext {
  readonly store: IndexStore;
  readonly pool: InferenceWorkerPool;
  /** The device the workers run on, and the ones tried before (undefined until the workers have said). */
  readonly provider: ProviderChoice | undefined;
  /** Embeds one image on the workers, timed for the Prometheus metrics. */
  readonly embed: (bytes: Uint8Array, name: string) => Promise<Float32Array>;
  readonly schemas: ReturnType<typeof routeSchemas>;
  /** Largest k a request may ask for. */
  readonly maxK: number;
  /** Largest width x height of an image decoded for a thumbnail (decode.ts's default when undefined). */
  readonly limitInputPixels: number | undefined;
  readonly metrics: RequestMetrics;
  readonly prometheus: ServiceMetrics;
}

/** A route's access class, in its fastify route `config`: `write` routes need the write check (access.ts). */
export interface RouteAccess {
  write: boolean;
}

/** The config of the routes that change the index. */
export const WRITE_ROUTE: RouteAccess = { write: true };
