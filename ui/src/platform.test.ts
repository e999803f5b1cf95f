import { afterEach, describe, expect, it } from 'vitest';
import { host, pickImage } from './platform';

type Internals = { invoke: (cmd: string, args?: Record<string, unknown>) => Promise<unknown> };
const g = globalThis as { __TAURI_INTERNALS__?: Internals };

afterEach(() => {
  delete g.__TAURI_INTERNALS__;
});

describe('platform in the desktop shell', () => {
  it('knows the host by the shell’s internals', () => {
    expect(host()).toBe('browser');
    g.__TAURI_INTERNALS__ = { invoke: async () => null };
    expect(host()).toBe('desktop');
  });

  it('turns the shell’s picked image (name and base64 bytes) into a File the upload path takes', async () => {
    const calls: string[] = [];
    g.__TAURI_INTERNALS__ = {
      invoke: async (cmd) => {
        calls.push(cmd);
        return { name: 'wm01.JPG', data: btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe1, 0x00, 0x7f)) };
      },
    };
    const f = await pickImage();
    expect(calls).toEqual(['pick_image']);
    expect(f?.name).toBe('wm01.JPG');
    expect(f?.type).toBe('image/jpeg');
    expect([...new Uint8Array(await f!.arrayBuffer())]).toEqual([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x7f]);
  });

  it('gives null when the operator cancels the dialog', async () => {
    g.__TAURI_INTERNALS__ = { invoke: async () => null };
    expect(await pickImage()).toBeNull();
  });
});
