/**
 * The one module that knows whether the panel runs in the Tauri desktop shell or in a browser.
 * Nothing else may touch Tauri. Drag and drop is HTML5 `File` in both (the desktop window
 * turns native drops off), so only picking files and opening links differ.
 */

/** What the Diagnosis view reads (the same list in both hosts). */
export const IMAGE_ACCEPT = 'image/*,.jpg,.jpeg,.png,.fff,.seq';

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

/** The desktop shell's `pick_image` answer: the picked file's name and its bytes (base64). */
interface PickedImage {
  name: string;
  data: string;
}

function fileOf(p: PickedImage): File {
  const bin = atob(p.data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const lower = p.name.toLowerCase();
  const type = /\.jpe?g$/.test(lower) ? 'image/jpeg' : lower.endsWith('.png') ? 'image/png' : 'application/octet-stream';
  return new File([bytes], p.name, { type });
}

/**
 * Lets the operator pick one thermal image. The desktop shell opens the system's native dialog
 * (its `pick_image` command reads the picked file and hands back its bytes, never a path); a
 * browser uses the file input. `null` when the operator cancels.
 */
export async function pickImage(): Promise<File | null> {
  const t = tauri();
  if (t) {
    const picked = (await t.invoke('pick_image')) as PickedImage | null;
    return picked ? fileOf(picked) : null;
  }
  const [f] = await pickFiles(IMAGE_ACCEPT);
  return f ?? null;
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
