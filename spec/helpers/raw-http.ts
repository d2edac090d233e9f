/**
 * @file One HTTP/1.1 request written byte for byte on a socket, so that a spec controls the exact
 * request target (percent-encoding, `//`, absolute form, `;` parameters) that fetch and curl would
 * normalise or refuse to send.
 */
import { connect } from 'node:net';

/** The status line's code and the raw response text. */
export interface RawResponse {
  status: number;
  text: string;
}

/** Sends `method target HTTP/1.1` with `headers` and `body` to 127.0.0.1:`port` and reads the answer. */
export function rawRequest(port: number, method: string, target: string, headers: Record<string, string> = {}, body?: Uint8Array): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const lines = [`${method} ${target} HTTP/1.1`, `host: 127.0.0.1:${port}`, 'connection: close', `content-length: ${body?.length ?? 0}`];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    socket.on('connect', () => {
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (body !== undefined) socket.write(body);
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? Number.NaN);
      resolve({ status, text });
    });
  });
}
