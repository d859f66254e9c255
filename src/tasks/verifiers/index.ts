import { z } from 'zod';
import { ConfigError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import type { VerifyResult } from '../types.js';
import { verifyChoice } from './choice.js';
import { verifyExact } from './exact.js';
import { verifyMath } from './math.js';
import { verifyNumeric } from './numeric.js';

export { extractChoice, verifyChoice, type ChoiceOptions } from './choice.js';
export { normalizeText, verifyExact, type ExactOptions } from './exact.js';
export {
  extractAnswerLine,
  extractBoxed,
  normalizeMathAnswer,
  parseMathNumber,
  verifyMath,
  type MathOptions,
} from './math.js';
export {
  findNumbers,
  numbersClose,
  parseNumber,
  verifyNumeric,
  type NumericOptions,
  type Tolerance,
} from './numeric.js';

/** A reference-answer checker chosen by configuration (used by JSONL tasks). */
export interface AnswerVerifier {
  readonly name: string;
  verify(expected: string, text: string): VerifyResult;
}

const tolerance = {
  absoluteTolerance: z.number().nonnegative().optional(),
  relativeTolerance: z.number().nonnegative().optional(),
};

/**
 * Each verifier's options, keyed by its name. A config names a verifier either by name
 * (`"numeric"`) or as an object with its options (`{ "name": "numeric", "relativeTolerance": 0.01 }`).
 */
const verifierTable = {
  exact: {
    schema: z.strictObject({
      name: z.literal('exact'),
      trim: z.boolean().optional(),
      caseSensitive: z.boolean().optional(),
      collapseWhitespace: z.boolean().optional(),
    }),
    create: (options: object) => (expected: string, text: string) =>
      verifyExact(expected, text, options),
  },
  numeric: {
    schema: z.strictObject({
      name: z.literal('numeric'),
      extract: z.enum(['whole', 'last']).optional(),
      ...tolerance,
    }),
    create: (options: object) => (expected: string, text: string) =>
      verifyNumeric(expected, text, options),
  },
  math: {
    schema: z.strictObject({
      name: z.literal('math'),
      fallback: z.enum(['whole-text', 'none']).optional(),
      ...tolerance,
    }),
    create: (options: object) => (expected: string, text: string) =>
      verifyMath(expected, text, options),
  },
  choice: {
    schema: z.strictObject({
      name: z.literal('choice'),
      letters: z
        .string()
        .regex(/^[A-Za-z]+$/, 'letters must be A–Z, e.g. "ABCD"')
        .optional(),
    }),
    create: (options: object) => (expected: string, text: string) =>
      verifyChoice(expected, text, options),
  },
} as const;

export type VerifierName = keyof typeof verifierTable;
export const verifierNames = Object.keys(verifierTable) as VerifierName[];

export type VerifierSpec =
  | VerifierName
  | { [Name in VerifierName]: z.input<(typeof verifierTable)[Name]['schema']> }[VerifierName];

/** Builds a verifier from its spec; unknown names and options fail with the valid choices. */
export function createVerifier(spec: unknown, source = 'verifier'): AnswerVerifier {
  const asObject = typeof spec === 'string' ? { name: spec } : spec;
  const name =
    asObject !== null && typeof asObject === 'object' && 'name' in asObject
      ? (asObject as { name: unknown }).name
      : undefined;
  if (typeof name !== 'string' || !Object.hasOwn(verifierTable, name)) {
    throw new ConfigError(
      source,
      `unknown verifier ${JSON.stringify(name ?? spec)} (valid: ${verifierNames.join(', ')})`,
    );
  }
  const entry = verifierTable[name as VerifierName];
  const options = parseWithSchema(entry.schema, asObject, source);
  const check = entry.create(options);
  return { name, verify: check };
}

/** The name a spec gives ("math", or { name: "math", … }), if any. */
function specName(spec: unknown): unknown {
  if (typeof spec === 'string') return spec;
  return spec !== null && typeof spec === 'object' && 'name' in spec
    ? (spec as { name: unknown }).name
    : undefined;
}

/**
 * What is wrong with a spec none of the verifiers accepts: an unknown name, with the valid
 * ones, or the first problem with a known verifier's options.
 */
function specProblem(spec: unknown): string {
  if (spec === undefined)
    return `a verifier is required: ${verifierNames.join(', ')}, or an object { name, …options }`;
  const name = specName(spec);
  if (typeof name !== 'string' || !Object.hasOwn(verifierTable, name))
    return `unknown verifier ${JSON.stringify(name ?? spec)} (valid: ${verifierNames.join(', ')}, or an object { name, …options })`;
  const parsed = verifierTable[name as VerifierName].schema.safeParse(spec);
  const issue = parsed.error?.issues[0];
  return issue
    ? `verifier "${name}": ${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`
    : `verifier "${name}": invalid options`;
}

/** Zod schema of a verifier spec, for embedding in larger config schemas. */
export const verifierSpecSchema = z.union(
  [
    z.enum(verifierNames as [VerifierName, ...VerifierName[]]),
    verifierTable.exact.schema,
    verifierTable.numeric.schema,
    verifierTable.math.schema,
    verifierTable.choice.schema,
  ],
  { error: (issue) => specProblem(issue.input) },
);
