/**
 * Compile-time checks, run by `npm run typecheck` (this folder's tsconfig) and never bundled
 * (main.ts does not import this file): the page reads the types the server writes, not
 * restatements of them. A restated copy drifts (the client's Transcript once had
 * `ended: string` where the trainer writes a TurnEnding) and this file then fails to compile.
 */
import type { Transcript as WrittenTranscript } from '../../trainer/outputs/transcript-type.js';
import type { Transcript } from './api.js';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

export const pageReadsTheWrittenTranscript: Same<Transcript, WrittenTranscript> = true;
