/**
 * Base class of every error caused by the user's input (a config, a file, a flag): the message
 * says what is wrong and what to do, and the CLI prints it without a stack trace. Subclasses
 * add structured fields (a path, the valid choices) so programs can react without parsing text.
 */
export class TeamtrError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A tensor shape, dtype or size that does not fit the operation. */
export class ShapeError extends TeamtrError {}

/** A file that is missing, truncated, malformed or not what it claims to be. */
export class FileFormatError extends TeamtrError {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
  }
}

/** A configuration value that fails validation; `path` is where it sits (e.g. `team.agents[1].delta`). */
export class ConfigError extends TeamtrError {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(path ? `${path}: ${detail}` : detail);
  }
}

/**
 * Weights holding NaN or ±Inf where finite ones are needed (a diverged run): `tensor` names the
 * array, `where` the checkpoint or model.
 */
export class NonFiniteWeightsError extends TeamtrError {
  readonly tensor: string;
  readonly element: number;
  readonly value: number;

  constructor(
    readonly where: string,
    found: { name: string; index: number; value: number },
    message: string,
  ) {
    super(message);
    this.tensor = found.name;
    this.element = found.index;
    this.value = found.value;
  }
}
