"""The desktop app driven through tauri-driver and WebKitWebDriver (run by tests/desktop/run.sh).

One session: the window comes back with its remembered size, the Overview shows the servers
ready over the live event stream, one Diagnosis run on a real thermal image ends with its
severity (the image is handed to the page by script: WebDriver cannot drag from the OS), then
closing the window quits the app and no process that ran under it is left. Every wait is
bounded and says what it waited for.
"""

import argparse
import base64
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.options import ArgOptions
from selenium.webdriver.support.ui import Select, WebDriverWait


def log(msg):
    print(f"  {msg}", file=sys.stderr, flush=True)


def processes():
    """pid -> (ppid, state) of every process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            out[int(name)] = (int(rest[1]), rest[0])
        except (OSError, IndexError, ValueError):
            pass
    return out


def descendants(root):
    procs = processes()
    found = []
    for pid in procs:
        q = pid
        while q in procs and q > 1:
            q = procs[q][0]
            if q == root:
                found.append(pid)
                break
    return found


def alive(pid):
    state = processes().get(pid)
    return state is not None and state[1] != "Z"


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return "?"


def app_pid(app):
    """The one running process of the app's binary (WebKitWebDriver started it)."""
    real = os.path.realpath(app)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pids = []
        for pid in processes():
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == real:
                    pids.append(pid)
            except OSError:
                pass
        if len(pids) == 1:
            return pids[0]
        time.sleep(0.5)
    raise SystemExit(f"expected one running {real}, found {pids}")


def wait_until(secs, what, check):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise SystemExit(f"gave up after {secs}s waiting for {what}")


def text_of(driver, testid):
    """The element's text content ("" while it is not there)."""
    return driver.execute_script(
        "const e = document.querySelector(`[data-testid=\"${arguments[0]}\"]`); return e ? e.textContent.trim() : '';",
        testid,
    )


DROP = """
const [b64, name] = arguments;
const bin = atob(b64);
const bytes = new Uint8Array(bin.length);
for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
const dt = new DataTransfer();
dt.items.add(new File([bytes], name, { type: 'image/jpeg' }));
const zone = document.querySelector('[data-testid="dropzone"]');
let seen = 0;
const spy = (e) => { seen = e.dataTransfer ? e.dataTransfer.files.length : 0; };
window.addEventListener('drop', spy, { capture: true, once: true });
zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
return seen;
"""

INPUT = """
const [b64, name] = arguments;
const bin = atob(b64);
const bytes = new Uint8Array(bin.length);
for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
const dt = new DataTransfer();
dt.items.add(new File([bytes], name, { type: 'image/jpeg' }));
const input = document.querySelector('[data-testid="file-input"]');
input.files = dt.files;
input.dispatchEvent(new Event('change', { bubbles: true }));
return input.files.length;
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--expect-size", required=True)
    args = ap.parse_args()

    opts = ArgOptions()
    opts.set_capability("browserName", "wry")
    opts.set_capability("tauri:options", {"application": os.path.realpath(args.app)})
    driver = webdriver.Remote(command_executor=args.driver, options=opts)
    closed = False
    try:
        driver.set_script_timeout(30)
        pid = app_pid(args.app)
        log(f"session {driver.session_id}, app pid {pid}")
        wait = WebDriverWait(driver, 120, poll_frequency=0.5)

        # The remembered size (written by an earlier run) comes back.
        want_w, want_h = (int(x) for x in args.expect_size.split("x"))
        rect = driver.get_window_rect()
        log(f"window rect {rect}")
        if abs(rect["width"] - want_w) > 40 or abs(rect["height"] - want_h) > 40:
            raise SystemExit(f"the window did not come back with its remembered size {args.expect_size}: {rect}")

        # The Overview, live.
        wait.until(lambda d: text_of(d, "conn") == "live", "the panel's event stream to be live")
        wait.until(lambda d: text_of(d, "card-ready").lower() == "ready4", "the Overview to show 4 servers ready")
        log(f"Overview: {text_of(driver, 'card-ready')!r} / {text_of(driver, 'card-unavailable')!r}, stream {text_of(driver, 'conn')}")
        if not driver.execute_script("return !!window.__TAURI_INTERNALS__"):
            raise SystemExit("the panel does not see the desktop shell (window.__TAURI_INTERNALS__ missing)")

        # One Diagnosis run.
        driver.find_element(By.CSS_SELECTOR, 'nav [data-view="diagnosis"]').click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid="view-diagnosis"]'), "the Diagnosis view")
        Select(driver.find_element(By.CSS_SELECTOR, '[data-testid="equipment"]')).select_by_value("panel")
        with open(args.image, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        name = os.path.basename(args.image)
        seen = driver.execute_script(DROP, data, name)
        if seen:
            log(f"dropped {name} on the drop zone (a synthetic DragEvent with its DataTransfer)")
        else:
            n = driver.execute_script(INPUT, data, name)
            log(f"this WebKit gave the synthetic drop no files; handed {name} to the file input instead ({n} file)")
        try:
            wait.until(lambda d: text_of(d, "run-outcome") or text_of(d, "run-error"), "the run to start")
        finally:
            log(f"phase {text_of(driver, 'phase')!r}, error {text_of(driver, 'run-error')!r}, outcome {text_of(driver, 'run-outcome')!r}")
        if text_of(driver, "run-error"):
            raise SystemExit(f"the upload or run failed: {text_of(driver, 'run-error')}")
        for node in ("vision", "knowledge", "reasoning"):
            wait.until(
                lambda d, n=node: d.find_element(By.CSS_SELECTOR, f'[data-testid="flow-node-{n}"]').get_attribute("data-status") == "done",
                f"flow node {node} to be done",
            )
        wait.until(lambda d: text_of(d, "run-outcome") == "ok", "the run's outcome ok")
        wait.until(lambda d: "major" in text_of(d, "severity").lower(), "the severity major")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid="hotspot"]'), "the hotspot outline")
        log(f"Diagnosis of {name}: outcome {text_of(driver, 'run-outcome')}, severity {text_of(driver, 'severity')!r}")
        time.sleep(0.5)  # let the last frame paint before the screenshot (not an assertion)
        shot = os.path.join(args.shots, "desktop-diagnosis.png")
        # WebKit's own capture of the page: a capture of the X root window can show a frame
        # painted before the view changed (seen: the Overview while the DOM held the result).
        if not driver.get_screenshot_as_file(shot):
            raise SystemExit(f"WebKitWebDriver could not write the screenshot {shot}")
        log(f"screenshot {shot}")

        # The native file dialog: the page may call the shell's one command (its capability,
        # for this origin only, is in place) and the system's dialog opens.
        driver.execute_script(
            "window.__pick = 'pending'; window.__TAURI_INTERNALS__.invoke('pick_image')"
            ".then(() => { window.__pick = 'answered'; }, (e) => { window.__pick = 'rejected: ' + e; });"
        )

        def dialog_or_rejection():
            state = driver.execute_script("return window.__pick")
            if state.startswith("rejected"):
                raise SystemExit(f"the shell refused pick_image to the panel: {state}")
            tree = subprocess.run(["xwininfo", "-root", "-tree"], capture_output=True, text=True, timeout=30).stdout
            return "Pick a thermal image" in tree

        wait_until(60, "the native file dialog (a window titled 'Pick a thermal image')", dialog_or_rejection)
        time.sleep(0.5)  # let the dialog paint before the screenshot (not an assertion)
        shot = os.path.join(args.shots, "desktop-picker.png")
        subprocess.run(["/usr/bin/import", "-window", "root", shot], check=True, timeout=60)
        log(f"the panel's Pick image… reached the shell: the native dialog is open ({shot})")

        # Close the window: the app quits, shuts the router down, leaves nothing behind.
        kids = descendants(pid)
        log(f"{len(kids)} processes under the app: " + ", ".join(sorted({cmdline(k).split()[0].rsplit('/', 1)[-1] for k in kids})))
        if not any("mcp-fixture" in cmdline(k) for k in kids):
            raise SystemExit("the fixture is not running under the app")
        driver.close()
        closed = True
        wait_until(60, "the app to quit after its window closed", lambda: not alive(pid))
        log("the window closed and the app quit")
        wait_until(30, "every process that ran under the app to end", lambda: not any(alive(k) for k in kids))
        log(f"no child process left (of {len(kids)})")
    finally:
        try:
            driver.quit()
        except WebDriverException as e:
            if not closed:
                raise
            log(f"session already ended with the app ({type(e).__name__})")


if __name__ == "__main__":
    main()
