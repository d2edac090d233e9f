/**
 * @file Special files and odd models for the specs of output paths and model outputs: a FIFO with a
 * reader on its other end, and an ONNX model with two outputs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { encodeModel, floatTensor, node, tensorValueInfo } from '../../lib/onnx/builder.js';

/** Makes a FIFO at `file` with a reader (`cat`) on it; `read` resolves with all that was written once the writer closes it. */
export function fifoWithReader(file: string): { read: Promise<string> } {
  const made = spawnSync('mkfifo', [file]);
  if (made.status !== 0) throw new Error(`mkfifo ${file} failed: ${made.stderr.toString()}`);
  const reader = spawn('cat', [file]);
  let text = '';
  reader.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { read: new Promise((resolve) => reader.on('close', () => resolve(text))) };
}

/**
 * Writes a model with input `pixels` [batch, 1, 28, 28] and two outputs: `features` (the flattened
 * pixels) and `doubled` (twice that); neither name says embedding, so which one is used is a choice.
 */
export function writeTwoOutputModel(file: string): void {
  writeFileSync(
    file,
    encodeModel({
      graphName: 'two',
      inputs: [tensorValueInfo('pixels', 'float32', ['batch', 1, 28, 28])],
      outputs: [tensorValueInfo('features', 'float32', ['batch', 784]), tensorValueInfo('doubled', 'float32', ['batch', 784])],
      initializers: [floatTensor('two', [1], [2])],
      nodes: [node('Flatten', ['pixels'], ['features'], { axis: { i: 1 } }), node('Mul', ['features', 'two'], ['doubled'])],
    }),
  );
}
