/** Base class of every error a user can act on; `code` is stable for scripts and tests. */
export class CCheckersError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** An (m, k) pair that docs/rules.md does not define. */
export class UnsupportedVariantError extends CCheckersError {
  constructor(message: string) {
    super('E_VARIANT', message);
  }
}

/** A position string (or position object) that does not describe a valid position. */
export class PositionFormatError extends CCheckersError {
  constructor(message: string) {
    super('E_POSITION', message);
  }
}
