import { TeamtrError } from '../util/errors.js';
import type { DemonstrationContext, RoleDefinition, TaskProtocol } from './types.js';

/** One round, role r speaks at turn r, the last turn is the answer. */
export function oneRoundProtocol(roles: RoleDefinition[], maxTurnChars: number): TaskProtocol {
  return {
    roles,
    turnOrder: roles.map((_, role) => role),
    answerTurn: roles.length - 1,
    maxTurnChars,
  };
}

/** Built-in demonstrations cover the default one-round protocol: role r follows r turns. */
export function checkDefaultProtocol(
  taskName: string,
  context: DemonstrationContext,
  roleCount: number,
): void {
  const { role, previousTurns } = context;
  if (!Number.isInteger(role) || role < 0 || role >= roleCount) {
    throw new TeamtrError(`${taskName}: role must be 0..${roleCount - 1}, got ${role}`);
  }
  if (previousTurns.length !== role) {
    throw new TeamtrError(
      `${taskName}: demonstrations follow the default one-round protocol, so role ${role} ` +
        `comes after exactly ${role} turns (got ${previousTurns.length})`,
    );
  }
}

export function sortedUnique(characters: string): string {
  return [...new Set(characters)].sort().join('');
}
