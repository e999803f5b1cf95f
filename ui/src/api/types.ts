/**
 * The admin API's types as the rest of the UI imports them: generated from Rust where the
 * generated file exists, provisional (api/provisional.ts) where it does not yet.
 */
export type * from '../generated/events';
export type * from './provisional';
