/**
 * @file The item routes: `GET /items` (a page of items, with the label counts), `GET /labels`,
 * `POST /items` (an image and its label, optional id; persisted before the answer),
 * `DELETE /items/:id` and `GET /items/:id/image` (a PNG thumbnail). The two that change the index
 * carry {@link WRITE_ROUTE}, which the write check of app.ts reads.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { decodeImageSource } from '../../image/decode.js';
import { rawInput } from '../../image/raw-image.js';
import { checkItemId, checkItemText } from '../../index-store/layout.js';
import { ITEMS_PAGE, THUMBNAIL_SIZES } from '../defaults.js';
import { HttpError } from '../http-errors.js';
import { imageUrl, knownItem, optionalText, parseIntParam, readImageRequest } from '../route-support.js';
import { WRITE_ROUTE, type RouteContext } from './route-context.js';

/** Registers the item routes (a fastify plugin; see the file comment). */
export async function itemRoutes(app: FastifyInstance, context: RouteContext): Promise<void> {
  const { store, embed, schemas, limitInputPixels } = context;
  app.get('/items', { schema: schemas.listItems }, async (request) => {
    const query = request.query as Record<string, string | undefined>;
    const offset = parseIntParam('offset', query['offset'], 0, Number.MAX_SAFE_INTEGER, 0);
    const limit = parseIntParam('limit', query['limit'], 1, ITEMS_PAGE.max, ITEMS_PAGE.default);
    const { total, items } = await store.list({ offset, limit, label: optionalText('label', query['label']) });
    return {
      total,
      offset,
      items: items.map(({ id, label }) => ({ id, label, image: imageUrl(id) })),
      labels: await store.labelCounts(),
    };
  });

  app.get('/labels', { schema: schemas.listLabels }, async () => {
    const labels = await store.labelCounts();
    return { total: labels.length, labels };
  });

  app.post('/items', { schema: schemas.addItem, config: WRITE_ROUTE }, async (request, reply) => {
    const { bytes, name, fields } = await readImageRequest(request);
    const label = checkItemText('label', fields['label']);
    const id = fields['id'] === undefined || fields['id'] === '' ? randomUUID() : checkItemId('id', fields['id']);
    const conflict = (): HttpError => new HttpError(409, 'E_ARG', `An item with id ${JSON.stringify(id)} is already in the index (expected a new id)`);
    if ((await store.get(id)) !== undefined) throw conflict();
    const vector = await embed(bytes, name);
    try {
      await store.add([{ id, label, vector, image: bytes }]);
    } catch (err) {
      // Another request added the same id while this image was being embedded.
      throw (await store.get(id)) !== undefined ? conflict() : err;
    }
    return reply.status(201).send({ id, label, image: imageUrl(id), count: store.count });
  });

  app.delete('/items/:id', { schema: schemas.removeItem, config: WRITE_ROUTE }, async (request) => {
    const { id } = request.params as { id: string };
    await knownItem(store, id);
    await store.remove([id]);
    return { id, removed: true, count: store.count };
  });

  app.get('/items/:id/image', { schema: schemas.itemImage }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const size = parseIntParam('size', (request.query as Record<string, string | undefined>)['size'], THUMBNAIL_SIZES.min, THUMBNAIL_SIZES.max, THUMBNAIL_SIZES.default);
    const raw = await decodeImageSource(store.resolveSource(await knownItem(store, id)), { channels: 3, limitInputPixels });
    const png = await rawInput(raw).resize(size, size, { fit: 'inside', withoutEnlargement: true }).png().toBuffer();
    return reply.type('image/png').header('cache-control', 'private, max-age=60').send(png);
  });
}
