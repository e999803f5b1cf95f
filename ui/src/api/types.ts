/**
 * The admin API's types as the rest of the UI imports them: generated from Rust where the
 * generated file exists (events.ts, admin.ts), provisional (api/provisional.ts) where it does
 * not yet.
 */
export type * from '../generated/events';
export type * from '../generated/admin';
export type * from './provisional';
export type { UpstreamBinding, SessionView, CallerView, SessionsView as Sessions } from '../generated/sessions';
