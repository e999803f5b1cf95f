/// <reference types="vite/client" />

/**
 * `JsonValue` is what ts-rs names serde_json's `Value`; the generated files use it without
 * importing it, so it is declared here once, globally, instead of editing generated code.
 */
type JsonValue = number | string | boolean | null | JsonValue[] | { [key: string]: JsonValue };
