/**
 * The one module that knows whether the panel runs in the Tauri desktop shell or in a browser.
 * Nothing else may touch Tauri. Drag and drop is HTML5 `File` in both (the desktop window
 * turns native drops off), so only picking files and opening links differ.
 */

interface TauriInternals {
  invoke: (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;
}

function tauri(): TauriInternals | undefined {
  return (globalThis as { __TAURI_INTERNALS__?: TauriInternals }).__TAURI_INTERNALS__;
}

/** `desktop` inside the Tauri shell, `browser` otherwise. */
export function host(): 'desktop' | 'browser' {
  return tauri() ? 'desktop' : 'browser';
}

/**
 * Lets the operator pick files. Both hosts use a hidden `<input type=file>`: it yields `File`
 * objects (bytes), which is what the panel uploads; the desktop webview shows its native dialog
 * for it.
 */
export function pickFiles(accept: string, multiple = false): Promise<File[]> {
  return new Promise((resolve) => {
    const input = document.createElement('input');
    input.type = 'file';
    input.accept = accept;
    input.multiple = multiple;
    input.style.display = 'none';
    input.addEventListener('change', () => {
      resolve(input.files ? [...input.files] : []);
      input.remove();
    });
    input.addEventListener('cancel', () => {
      resolve([]);
      input.remove();
    });
    document.body.appendChild(input);
    input.click();
  });
}

/** Opens a link outside the panel: the system browser from the desktop shell, a new tab otherwise. */
export async function openExternal(url: string): Promise<void> {
  const t = tauri();
  if (t) {
    await t.invoke('plugin:opener|open_url', { url });
    return;
  }
  window.open(url, '_blank', 'noopener,noreferrer');
}

/** Saves text as a file: a download in both hosts (the webview handles it). */
export function saveText(name: string, text: string, type = 'application/x-ndjson'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}
