import { FileFormatError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { hashText, type CheckpointIntegrity } from './checkpoint-integrity.js';
import { runStateSchema, type RunState } from './run-state.js';

/**
 * checkpoint/state.json, sealed. The state carries the checkpoint's integrity record, and the
 * record ends in `recordSha256`: the SHA-256 of the file's text with that field empty. The
 * record vouches for every other file; the seal vouches for the state and the record. Reading
 * it back requires the text to be exactly what teamtr writes for its values (so even a change
 * that keeps the values, such as added whitespace, is seen) and the seal to match, so an edited
 * counter, an edited or removed record, or one flipped bit is refused, naming the file.
 */

/** A run state with its integrity record: what a checkpoint's state.json holds. */
export type SealedRunState = RunState & { integrity: CheckpointIntegrity };

/** The text of state.json for `state`, its record sealed. */
export function sealedStateText(state: SealedRunState): string {
  return stateText(state, hashText(stateText(state, '')));
}

const restore =
  'restore checkpoint/state.json from a backup, or start a new run (the checkpoint cannot be trusted without it)';

/** Parses and checks state.json's text; throws a FileFormatError naming `statePath`. */
export function readSealedState(text: string, statePath: string): SealedRunState {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new FileFormatError(
      statePath,
      `not valid JSON (${(error as Error).message}): the file was edited or damaged; ${restore}`,
    );
  }
  const state = parseWithSchema(runStateSchema, raw, statePath);
  if (!state.integrity)
    throw new FileFormatError(
      statePath,
      `holds no integrity record, so nothing in the checkpoint can be verified (the record was removed, or an older teamtr wrote it); ${restore}`,
    );
  const written = raw as SealedRunState;
  if (`${JSON.stringify(raw, null, 2)}\n` !== text)
    throw new FileFormatError(
      statePath,
      `its text is not as teamtr wrote it (its layout or characters were changed); ${restore}`,
    );
  if (hashText(stateText(written, '')) !== written.integrity.recordSha256)
    throw new FileFormatError(
      statePath,
      `the state or its integrity record was edited or damaged after it was saved (the SHA-256 sealing them does not match); ${restore}`,
    );
  return state as SealedRunState;
}

function stateText(state: SealedRunState, recordSha256: string): string {
  const sealed = { ...state, integrity: { ...state.integrity, recordSha256 } };
  return `${JSON.stringify(sealed, null, 2)}\n`;
}
