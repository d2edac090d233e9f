// Registers a module resolve hook under which every @tensorflow/* package is missing, as after
// `npm install dmlkit` without the optional peer dependencies: node --import ./spec/helpers/hide-tensorflow.mjs ...
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@tensorflow/')) {
    const name = specifier.split('/').slice(0, 2).join('/');
    throw Object.assign(new Error("Cannot find package '" + name + "' imported from " + context.parentURL), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
