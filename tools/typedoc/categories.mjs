// TypeDoc plugin: groups the API reference by the area of lib/ each declaration comes from (Evaluate,
// Embed, Search, Data, Metrics, Reports, Train, Export, Serve), so that no one reads ~70 symbols in
// one alphabetical list. A declaration's own `@category` tag wins; the area is read from the path of
// the file that declares it (lib/<area>/...), which keeps the source free of tags that repeat its folder.
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';

/** lib/ folder (or top-level file) -> category. */
const AREAS = new Map([
  ['eval', 'Evaluate'],
  ['facade.ts', 'Evaluate'],
  ['embed', 'Embed'],
  ['image', 'Embed'],
  ['onnx', 'Embed'],
  ['search', 'Search'],
  ['data', 'Data'],
  ['metrics', 'Metrics'],
  ['report', 'Reports'],
  ['train', 'Train'],
  ['export', 'Export'],
  ['serve', 'Serve'],
  ['index-store', 'Serve'],
  ['errors.ts', 'Errors'],
  ['util', 'Utilities'],
  ['cli', 'Utilities'],
]);

/** The category of a declaration in `fileName`, or undefined outside lib/. */
export function categoryOf(fileName) {
  const match = /\/lib\/([^/]+)/.exec(fileName.replaceAll('\\', '/'));
  return match ? AREAS.get(match[1]) : undefined;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    // Only the entry points' own exports: their members stay under them.
    if (!reflection.parent?.kindOf(ReflectionKind.Module | ReflectionKind.Project)) return;
    const fileName = context.getSymbolFromReflection(reflection)?.declarations?.[0]?.getSourceFile().fileName;
    const category = fileName === undefined ? undefined : categoryOf(fileName);
    if (category === undefined) return;
    reflection.comment ??= new Comment();
    if (reflection.comment.blockTags.some((tag) => tag.tag === '@category')) return;
    reflection.comment.blockTags.push(new CommentTag('@category', [{ kind: 'text', text: category }]));
  });
}
