// After `tsc`: copies the doc comments of zod schema fields into the emitted declarations.
//
// tsc writes a schema's inferred type into dist/**/*.d.ts without the doc comments its fields
// carry in the source (`/** Trajectories per prompt. */ groupSize: z.number()…`), so editors of
// library users show no documentation on `rollout.groupSize` or `trustRegion.delta`. This step
// reads each source file's object literals, keys every documented property by its path of
// property names (`trainConfigSchema.rollout.groupSize`), and writes the same comment above the
// property signature with that path in the .d.ts. No library does this for zod's inferred
// types, hence this script; it uses the TypeScript compiler's own parser.
//
// The same comments are the one source of the config's descriptions everywhere else:
// `configDocs()` below reads them, by config path, off the type checker's view of
// TrainConfigInput, and scripts/reference-docs.mjs writes them into the CLI's `--help`
// (src/cli/reference/config-docs.generated.ts) and docs/reference/config.md.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

function parse(file) {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

function nameOf(node) {
  return node.name && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))
    ? node.name.text
    : null;
}

/** The doc comment right above `node`, as written. */
function docOf(node, source) {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const last = ranges.at(-1);
  if (!last) return null;
  const text = source.text.slice(last.pos, last.end);
  return text.startsWith('/**') ? text : null;
}

/**
 * Calls `visit(node, path)` for every named property `isProperty` accepts, with its path of
 * property names from the variable it sits in (`trainConfigSchema.rollout.groupSize`).
 */
function walkProperties(file, isProperty, visit) {
  const walk = (node, trail) => {
    let next = trail;
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)) next = [node.name.text];
    else if (isProperty(node) && nameOf(node) !== null) {
      next = [...trail, nameOf(node)];
      visit(node, next);
    }
    ts.forEachChild(node, (child) => walk(child, next));
  };
  walk(file, []);
}

/**
 * The source's documented properties, path → doc comment, and its aliases: a property whose
 * schema is another variable of the file (`agents: z.array(agentConfigSchema)`) reads that
 * variable's docs below it (`trainConfigSchema.agents` → `agentConfigSchema`).
 */
function sourceDocs(source) {
  const docs = new Map();
  const aliases = new Map();
  const variables = new Set();
  const collectVariables = (node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)) variables.add(node.name.text);
    ts.forEachChild(node, collectVariables);
  };
  collectVariables(source);
  const referencedVariables = (node) => {
    const found = new Set();
    const visit = (child) => {
      if (ts.isIdentifier(child) && variables.has(child.text)) found.add(child.text);
      ts.forEachChild(child, visit);
    };
    visit(node);
    return [...found];
  };
  walkProperties(source, ts.isPropertyAssignment, (node, trail) => {
    const doc = docOf(node, source);
    if (doc) docs.set(trail.join('.'), doc);
    const referenced = referencedVariables(node.initializer);
    if (referenced.length === 1) aliases.set(trail.join('.'), referenced[0]);
  });
  return { docs, aliases };
}

/** The doc of a property path, directly or through the longest alias of one of its prefixes. */
function lookup({ docs, aliases }, trail, depth = 0) {
  const direct = docs.get(trail.join('.'));
  if (direct || depth > 8) return direct;
  for (let length = trail.length - 1; length >= 1; length--) {
    const alias = aliases.get(trail.slice(0, length).join('.'));
    if (alias) return lookup({ docs, aliases }, [alias, ...trail.slice(length)], depth + 1);
  }
  return undefined;
}

/** Insertions (position, text) of the doc comments the declaration's property signatures lack. */
function insertions(declaration, docs) {
  const found = [];
  walkProperties(declaration, ts.isPropertySignature, (node, trail) => {
    const doc = lookup(docs, trail);
    if (!doc || docOf(node, declaration)) return;
    const start = node.getStart(declaration);
    const lineStart = declaration.text.lastIndexOf('\n', start) + 1;
    const indent = declaration.text.slice(lineStart, start);
    const text = doc
      .split('\n')
      .map((line, index) => (index === 0 ? line : `${indent}${line.trimStart()}`))
      .join('\n');
    found.push({ position: start, text: `${text}\n${indent}` });
  });
  return found;
}

function declarationFiles(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return declarationFiles(full);
    return entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Copies the schema doc comments into every declaration file under `output`. */
function documentDeclarations(output) {
  let documented = 0;
  for (const declarationPath of declarationFiles(output)) {
    const relative = path.relative(output, declarationPath);
    const sourcePath = path.join(root, 'src', relative.replace(/\.d\.ts$/, '.ts'));
    if (!existsSync(sourcePath)) continue;
    const source = parse(sourcePath);
    if (!source.text.includes('z.')) continue;
    const docs = sourceDocs(source);
    if (docs.docs.size === 0) continue;
    const declaration = parse(declarationPath);
    const found = insertions(declaration, docs);
    if (found.length === 0) continue;
    let text = declaration.text;
    for (const { position, text: comment } of found.sort((a, b) => b.position - a.position))
      text = text.slice(0, position) + comment + text.slice(position);
    writeFileSync(declarationPath, text);
    documented += found.length;
  }
  return documented;
}

/**
 * A property's place in a config path: its name, and for a member of a union told apart by a
 * literal `name` (the task kinds) that name in parentheses: `task(jsonl)`. The CLI's schema
 * walker (src/cli/reference/config-entries.ts) names paths the same way.
 */
function variantOf(checker, member) {
  const name = checker.getPropertyOfType(member, 'name');
  if (!name) return null;
  const type = checker.getTypeOfSymbol(name);
  return type.isStringLiteral() ? type.value : null;
}

/** The config schemas whose settings are documented, by name: [source file, schema variable]. */
export const documentedSchemas = {
  train: ['src/trainer/config/train-config.ts', 'trainConfigSchema'],
  pretrain: ['src/pretrain/pretrain.ts', 'pretrainConfigSchema'],
};

/**
 * The doc comment of every property of each documented schema's input type, by config path
 * (`rollout.groupSize`, `agents.lora.alpha`, `task(jsonl).path`; array elements add no
 * segment): `{ text, default }`, `default` being the comment's `@default` tag. Read from the
 * type checker's view of `z.input<typeof schema>`, so the comments of schemas from other files
 * (LoRA, endpoints, tasks) come along.
 */
export function configDocs() {
  const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json');
  const { options } = ts.parseJsonConfigFileContent(
    ts.readConfigFile(configPath, ts.sys.readFile).config,
    ts.sys,
    root,
  );
  // A file that names each schema's input type, compiled with the sources.
  const probe = path.join(root, 'src', '__schema-docs-probe.ts');
  const probeText = [
    "import type { z } from 'zod';",
    ...Object.entries(documentedSchemas).map(
      ([name, [file, variable]]) =>
        `export type ${name} = z.input<typeof import('./${path.relative('src', file).replace(/\.ts$/, '.js')}').${variable}>;`,
    ),
  ].join('\n');
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language) =>
    path.resolve(name) === probe
      ? ts.createSourceFile(name, probeText, language, true)
      : getSourceFile(name, language);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === probe || fileExists(name);
  const program = ts.createProgram([probe], { ...options, noEmit: true }, host);
  const checker = program.getTypeChecker();
  const aliases = program.getSourceFile(probe).statements.filter(ts.isTypeAliasDeclaration);
  return Object.fromEntries(
    aliases.map((alias) => [alias.name.text, propertyDocs(checker, checker.getTypeAtLocation(alias.name))]),
  );
}

/** A comment's text on one line (its line breaks are the source's wrapping). */
const oneLine = (text) => text.replace(/\s*\n\s*/g, ' ').trim();

function propertyDocs(checker, root) {
  const docs = {};
  const walk = (type, trail, depth) => {
    if (depth > 8) return;
    const whole = checker.getNonNullableType(type);
    for (const member of whole.isUnion() ? whole.types : [whole]) {
      if (checker.isArrayType(member)) {
        walk(checker.getTypeArguments(member)[0], trail, depth + 1);
        continue;
      }
      if (!(member.flags & ts.TypeFlags.Object) || checker.isTupleType(member)) continue;
      const variant = whole.isUnion() ? variantOf(checker, member) : null;
      const base =
        variant && trail.length > 0 ? [...trail.slice(0, -1), `${trail.at(-1)}(${variant})`] : trail;
      for (const symbol of checker.getPropertiesOfType(member)) {
        const key = [...base, symbol.name].join('.');
        const text = oneLine(ts.displayPartsToString(symbol.getDocumentationComment(checker)));
        const tag = symbol.getJsDocTags(checker).find((found) => found.name === 'default');
        const fallback = tag ? oneLine(ts.displayPartsToString(tag.text)) : '';
        if ((text || fallback) && !docs[key])
          docs[key] = { ...(text ? { text } : {}), ...(fallback ? { default: fallback } : {}) };
        walk(checker.getTypeOfSymbol(symbol), [...base, symbol.name], depth + 1);
      }
    }
  };
  walk(root, [], 0);
  return Object.fromEntries(Object.entries(docs).sort(([a], [b]) => (a < b ? -1 : 1)));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  /** The declarations' directory: dist/, or the one given. */
  const output = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
  const documented = documentDeclarations(output);
  console.log(
    `schema docs: ${documented} field comments copied into ${path.relative(root, output) || '.'}/**/*.d.ts`,
  );
}
