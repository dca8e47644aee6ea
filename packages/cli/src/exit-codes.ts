/**
 * The exit-code contract of the `ccheckers` program: 0 success, 1 a negative result such as a
 * verify mismatch, 2 usage error, bad input or fatal error, 130 interrupted.
 */
export const EXIT_OK = 0;
export const EXIT_NEGATIVE = 1;
export const EXIT_ERROR = 2;
/** Exit code of an interrupted command (128 + SIGINT), as shells expect. */
export const EXIT_INTERRUPTED = 130;
