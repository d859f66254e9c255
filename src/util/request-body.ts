import type { IncomingMessage } from 'node:http';

/**
 * The whole body of an HTTP request, refused (with `tooLarge(detail)`) as soon as it passes
 * `limit` bytes, whether its Content-Length says so up front or it streams past it: memory
 * stays bounded whatever a client sends.
 */
export function readRequestBody(
  request: IncomingMessage,
  limit: number,
  tooLarge: (detail: string) => Error,
): Promise<Buffer> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit)
    return Promise.reject(tooLarge(`the request body is ${declared} bytes; the limit is ${limit}`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(tooLarge(`the request body exceeds the limit of ${limit} bytes`));
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}
