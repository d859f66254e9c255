import type { MatmulArguments } from '../types.js';

/**
 * C = alpha·op(A)·op(B) + beta·C, batched. Every entry of C is a dot product of a row of op(A)
 * with a column of op(B), accumulated in float64. Both operands are first brought into
 * "rows along k" form (a transpose copy only where the layout needs it), then entries are
 * computed in 2×4 blocks: eight running sums stay in registers and each loaded value is used
 * two or four times, which is what lets plain JavaScript reach a few GFLOP/s.
 * beta = 0 overwrites C (NaN or garbage in C does not leak through), as BLAS does.
 */
export function matmul(args: MatmulArguments): void {
  const { a, b, c, batch, m, n, k, transposeA, transposeB, strideA, strideB } = args;
  const alpha = args.alpha ?? 1;
  const beta = args.beta ?? 0;
  for (let item = 0; item < batch; item++) {
    const itemA = a.subarray(item * strideA, item * strideA + m * k);
    const itemB = b.subarray(item * strideB, item * strideB + k * n);
    // rowsOfA[i·k + p] = op(A)(i, p); columnsOfB[j·k + p] = op(B)(p, j)
    const rowsOfA = transposeA ? transpose(itemA, k, m) : itemA;
    const columnsOfB = transposeB ? itemB : transpose(itemB, k, n);
    const output = c.subarray(item * m * n, (item + 1) * m * n);
    multiplyRowsByColumns(rowsOfA, columnsOfB, output, { m, n, k, alpha, beta });
  }
}

/** The [columns×rows] transpose of a row-major [rows×columns] matrix. */
function transpose(matrix: Float32Array, rows: number, columns: number): Float32Array {
  const result = new Float32Array(rows * columns);
  for (let r = 0; r < rows; r++) {
    for (let col = 0; col < columns; col++) result[col * rows + r] = matrix[r * columns + col];
  }
  return result;
}

interface ProductShape {
  m: number;
  n: number;
  k: number;
  alpha: number;
  beta: number;
}

function store(c: Float32Array, index: number, sum: number, shape: ProductShape): void {
  c[index] = shape.alpha * sum + (shape.beta === 0 ? 0 : shape.beta * c[index]);
}

/** Columns of C per pass: their rows of op(B) (up to 64 × k floats) stay in cache. */
const COLUMN_BLOCK = 64;

/** C[i, j] = alpha·(row i of A)·(row j of B) + beta·C[i, j], both operands [·×k]. */
function multiplyRowsByColumns(
  rows: Float32Array,
  columns: Float32Array,
  c: Float32Array,
  shape: ProductShape,
): void {
  const { m, n } = shape;
  for (let start = 0; start < n; start += COLUMN_BLOCK) {
    const end = Math.min(n, start + COLUMN_BLOCK);
    let i = 0;
    for (; i + 2 <= m; i += 2) {
      let j = start;
      for (; j + 4 <= end; j += 4) block2x4(rows, columns, c, i, j, shape);
      for (; j < end; j++) {
        store(c, i * n + j, dot(rows, i, columns, j, shape.k), shape);
        store(c, (i + 1) * n + j, dot(rows, i + 1, columns, j, shape.k), shape);
      }
    }
    for (; i < m; i++) {
      for (let j = start; j < end; j++)
        store(c, i * n + j, dot(rows, i, columns, j, shape.k), shape);
    }
  }
}

function dot(rows: Float32Array, i: number, columns: Float32Array, j: number, k: number): number {
  let sum = 0;
  for (let p = 0; p < k; p++) sum += rows[i * k + p] * columns[j * k + p];
  return sum;
}

/** Entries (i..i+1, j..j+3) of C. */
function block2x4(
  rows: Float32Array,
  columns: Float32Array,
  c: Float32Array,
  i: number,
  j: number,
  shape: ProductShape,
): void {
  const { k, n } = shape;
  const a0 = i * k;
  const a1 = a0 + k;
  const b0 = j * k;
  const b1 = b0 + k;
  const b2 = b1 + k;
  const b3 = b2 + k;
  let s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0; // prettier-ignore
  for (let p = 0; p < k; p++) {
    const x0 = rows[a0 + p];
    const x1 = rows[a1 + p];
    const y0 = columns[b0 + p];
    const y1 = columns[b1 + p];
    const y2 = columns[b2 + p];
    const y3 = columns[b3 + p];
    s00 += x0 * y0;
    s01 += x0 * y1;
    s02 += x0 * y2;
    s03 += x0 * y3;
    s10 += x1 * y0;
    s11 += x1 * y1;
    s12 += x1 * y2;
    s13 += x1 * y3;
  }
  const top = i * n + j;
  const bottom = top + n;
  store(c, top, s00, shape);
  store(c, top + 1, s01, shape);
  store(c, top + 2, s02, shape);
  store(c, top + 3, s03, shape);
  store(c, bottom, s10, shape);
  store(c, bottom + 1, s11, shape);
  store(c, bottom + 2, s12, shape);
  store(c, bottom + 3, s13, shape);
}
