import { FileFormatError, TeamtrError } from '../util/errors.js';

/**
 * Checks of a tokenizer.json's vocabulary that must come before the tokenizer library sees it:
 * the library stores tokens in an array indexed by id, so one added token with id 1e9 makes it
 * walk a billion slots (minutes) before anything else can refuse the file; and a Unigram model
 * given an object vocabulary fails inside the library with "text is not iterable".
 */

interface VocabularyModel {
  type?: 'BPE' | 'WordPiece' | 'Unigram' | undefined;
  vocab: Record<string, number> | Array<[string, number]>;
  unk_id?: unknown;
}

interface AddedTokenId {
  id: number;
  content: string;
}

/** Ids must run from 0 without gaps: none may reach the number of distinct ids. */
export function checkVocabularyIds(
  model: VocabularyModel,
  addedTokens: readonly AddedTokenId[],
  source: string,
): void {
  checkVocabularyKind(model, source);
  const ids = new Set<number>();
  let largest: { id: number; token: string; kind: string } | null = null;
  const consider = (id: number, token: string, kind: string) => {
    ids.add(id);
    if (largest === null || id > largest.id) largest = { id, token, kind };
  };
  if (Array.isArray(model.vocab))
    model.vocab.forEach(([piece], id) => consider(id, piece, 'piece'));
  else for (const [token, id] of Object.entries(model.vocab)) consider(id, token, 'token');
  for (const token of addedTokens) consider(token.id, token.content, 'added token');
  const found = largest as { id: number; token: string; kind: string } | null;
  if (found !== null && found.id >= ids.size)
    throw new FileFormatError(
      source,
      `${found.kind} ${JSON.stringify(found.token)} has id ${found.id}, but the vocabulary holds only ${ids.size} distinct ids (ids must run from 0 without gaps); the file is damaged or hand-edited`,
    );
}

function checkVocabularyKind(model: VocabularyModel, source: string): void {
  const listed = Array.isArray(model.vocab);
  const type = model.type ?? (listed ? 'Unigram' : undefined);
  if (type === 'Unigram' && !listed)
    throw new FileFormatError(
      source,
      'this Unigram tokenizer is not supported: its model.vocab is an object of ids, where a Unigram model lists [piece, score] pairs (is model.type wrong? BPE and WordPiece models use an object)',
    );
  if (type !== 'Unigram' && listed)
    throw new FileFormatError(
      source,
      `this ${type} tokenizer is not supported: its model.vocab is a list of [piece, score] pairs, which only Unigram models use (is model.type wrong?)`,
    );
  if (type === 'Unigram') {
    const size = (model.vocab as unknown[]).length;
    const unknown = model.unk_id;
    if (unknown !== undefined && unknown !== null)
      if (!Number.isInteger(unknown) || (unknown as number) < 0 || (unknown as number) >= size)
        throw new FileFormatError(
          source,
          `this Unigram tokenizer is not supported: model.unk_id ${JSON.stringify(unknown)} is not the id of one of its ${size} pieces`,
        );
  }
}

/** An id the library produced that is not a token of the vocabulary (e.g. no unk token). */
export function checkEncodedIds(ids: readonly unknown[], vocabSize: number, text: string): void {
  for (const id of ids)
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= vocabSize)
      throw new TeamtrError(
        `tokenizer: encoding ${JSON.stringify(text.slice(0, 40))}${text.length > 40 ? '…' : ''} gave id ${String(id)}, which is not in the vocabulary (0 to ${vocabSize - 1}); the text has a character the tokenizer cannot encode and it has no unknown token (unk_id / unk_token)`,
      );
}
