/**
 * @file The generated blocks of the docs (scripts/tools/doc-blocks.ts): a block's text is replaced
 * between its markers and nothing else moves; a missing block is an error naming it; the docs hold the
 * blocks scripts/tools/update-doc-numbers.ts writes.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { replaceBlock } from '../../../scripts/tools/doc-blocks.js';

describe('generated doc blocks', () => {
  it('replaces the text between a block\'s markers, and only that', () => {
    const text = 'a\n<!-- generated: x (cmd) -->\nold\nlines\n<!-- /generated: x -->\nb\n<!-- generated: y -->\nkeep\n<!-- /generated: y -->\n';
    expect(replaceBlock(text, 'x', 'new')).to.equal('a\n<!-- generated: x (cmd) -->\nnew\n<!-- /generated: x -->\nb\n<!-- generated: y -->\nkeep\n<!-- /generated: y -->\n');
    expect(replaceBlock(replaceBlock(text, 'x', 'new\n\n'), 'x', 'new')).to.equal(replaceBlock(text, 'x', 'new'));
    expect(() => replaceBlock(text, 'z', 'new', 'doc.md')).to.throw('doc.md has no block "z" (<!-- generated: z ... --> ... <!-- /generated: z -->)');
  });

  it('the docs hold the blocks update-doc-numbers writes', () => {
    for (const [file, name] of [['docs/benchmarks.md', 'package'], ['docs/results.md', 'default-model']] as const) {
      expect(() => replaceBlock(readFileSync(file, 'utf8'), name, 'x'), file).to.not.throw();
    }
  });
});
