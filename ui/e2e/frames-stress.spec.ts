/**
 * Frame stress: for STRESS_SECONDS (default 10) SDK clients make `slow` calls through the
 * router's `/mcp` with a progressToken — the fixture sends one `notifications/progress` per
 * step, so every step is a frame on both legs (upstream in, downstream out) — plus ordinary
 * `echo` calls, while the Frames view is open.
 *
 * What the router offered is counted from the router's side: a second `/api/events` viewer
 * (in this Node process, `kinds=frame`) counts every frame event the bus delivered, plus what
 * it was told it lost (`lagged`). The page must show exactly that many frames, or report the
 * difference as `lagged` drops: shown + reported drops == sent, no silent loss. It must answer
 * clicks (pause, select a row and see its detail, resume) while the storm runs, each within
 * STRESS_CLICK_BOUND_MS (default 2 000) as the page measures it: from the click event's timestamp
 * to the next frame after its handlers. Playwright's wall clock per step is reported too, not
 * asserted: it runs in this process, which is also the load generator (a bare page.evaluate
 * round trip is reported beside it). The offered rate is always printed and asserted only with
 * STRESS_MIN_RATE (e.g. 5000): below 5 000 the message says the load generator is the limit.
 * The longest main-thread stall (long-task observer and a requestAnimationFrame gap monitor) is
 * reported, not asserted: it measures the machine as much as the page. STRESS_PROFILE=1 writes a
 * CPU profile of the page during the clicks (results/frames-stress.cpuprofile) and prints the
 * top self-time functions.
 *
 * Results: console and ui/e2e/results/frames-stress.json (git-ignored).
 */
import { test, expect, type Page } from '@playwright/test';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readStack, SHOTS, UI_DIR } from './stack';
import { sdkClient } from './mcp';

/** Frames of background probes that can fall between the page's and the counter's baselines. */
const BACKGROUND_SLACK = 8;
const stack = readStack();
const SECONDS = Number(process.env.STRESS_SECONDS ?? 10);
/** Concurrent `slow` calls, each 1 000 progress notifications per second asked for. */
const SLOW_CALLS = Number(process.env.STRESS_SLOW_CALLS ?? 12);
/** Clients making ordinary `echo` calls meanwhile. */
const ECHO_CLIENTS = Number(process.env.STRESS_ECHO_CLIENTS ?? 2);
/** A click must be answered within this (generous for a busy 2-core box; the page aims well under 1 s). */
const CLICK_BOUND_MS = Number(process.env.STRESS_CLICK_BOUND_MS ?? 2_000);
/**
 * The offered rate is asserted only when STRESS_MIN_RATE is set (e.g. 5000): whether this machine
 * can offer it is a property of the load generator (SDK clients, fixture, router on the same
 * cores), not of the page. The rate is always printed.
 */
/**
 * How long Playwright waits for each step. Its round trips run in this Node process, which is
 * also the load generator (SDK clients parsing thousands of notifications a second) on the same
 * cores: the wall clock of a step measures both sides. The bound is asserted on the page's own
 * figure, from the click event's timestamp to the frame painted after its handlers.
 */
const ACTION_TIMEOUT_MS = Math.max(30_000, CLICK_BOUND_MS * 10);
const MIN_RATE = process.env.STRESS_MIN_RATE ? Number(process.env.STRESS_MIN_RATE) : null;

/** Counts frame events from the router's bus through its own `/api/events` viewer. */
function routerCounter() {
  const url = new URL('/api/events?kinds=frame', stack.origin.replace(/^http/, 'ws'));
  const ws = new WebSocket(url, ['switchboard.events', `bearer.${stack.token}`]);
  const c = { frames: 0, lost: 0, snapshot: false, close: () => ws.close() };
  ws.onmessage = (m) => {
    const msg = JSON.parse(String(m.data)) as { type: string; events?: { type: string }[]; lost?: number };
    if (msg.type === 'snapshot') c.snapshot = true;
    else if (msg.type === 'events') {
      for (const e of msg.events ?? []) if (e.type === 'frame') c.frames += 1;
    } else if (msg.type === 'lagged') c.lost += msg.lost ?? 0;
  };
  return c;
}

/** What the page says: frames received (shown + evicted from its ring), shown, lagged. */
async function pageCounts(page: Page) {
  return page.evaluate(() => {
    const n = (s: string | undefined) => Number((s ?? '0').replace(/[^0-9]/g, '') || 0);
    const counts = document.querySelector('[data-testid="frame-counts"]')?.textContent ?? '';
    const lagged = document.querySelector('[data-testid="lagged"]')?.textContent ?? '';
    return {
      counts,
      shown: n(/([\d,]+) shown/.exec(counts)?.[1]),
      received: n(/([\d,]+) received/.exec(counts)?.[1]),
      lagged,
      lost: n(/([\d,]+)/.exec(lagged)?.[1]),
      stall: (window as unknown as { __stall: { longest: number; longTasks: number } }).__stall,
      clicks: (window as unknown as { __clicks: { target: string; ms: number }[] }).__clicks,
    };
  });
}

test('frames: ≥ 5 000 frames/s through the router; the page counts every frame or reports the drops, and stays responsive', async ({ page }) => {
  test.setTimeout(SECONDS * 1000 + 180_000);
  await page.addInitScript(() => {
    const w = window as unknown as { __stall: { longest: number; longTasks: number } };
    w.__stall = { longest: 0, longTasks: 0 };
    try {
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          w.__stall.longTasks += 1;
          w.__stall.longest = Math.max(w.__stall.longest, e.duration);
        }
      }).observe({ type: 'longtask', buffered: true });
    } catch {
      // no long-task timing: the frame-gap monitor below still measures
    }
    // Page-side click latency: from the click event's timestamp (when the page got the input) to
    // the first frame after its handlers ran (what the operator waits for).
    const c = window as unknown as { __clicks: { target: string; ms: number }[] };
    c.__clicks = [];
    document.addEventListener(
      'click',
      (e) => {
        const t0 = e.timeStamp;
        const el = e.target as HTMLElement | null;
        const target = el?.closest('[data-seq]') ? 'row' : (el?.closest('[data-testid]')?.getAttribute('data-testid') ?? el?.tagName ?? '?');
        requestAnimationFrame(() => setTimeout(() => c.__clicks.push({ target, ms: Math.round(performance.now() - t0) }), 0));
      },
      true,
    );
    let last = performance.now();
    const tick = () => {
      const now = performance.now();
      w.__stall.longest = Math.max(w.__stall.longest, now - last);
      last = now;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  await page.goto(stack.panel);
  await expect(page.getByTestId('conn')).toHaveText(/live/);
  await page.locator('nav [data-view="frames"]').click();
  await expect(page.getByTestId('frame-counts')).toBeVisible();

  const counter = routerCounter();
  await expect.poll(() => counter.snapshot).toBe(true);
  const slowClients = await Promise.all(Array.from({ length: SLOW_CALLS }, (_, i) => sdkClient(stack.mcp, 'auto', `stress-slow-${i}`)));
  const echoClients = await Promise.all(Array.from({ length: ECHO_CLIENTS }, (_, i) => sdkClient(stack.mcp, 'auto', `stress-echo-${i}`)));
  // Quiet now (the clients' handshakes are through): both sides start counting here.
  await page.waitForTimeout(1_000);
  const before = await pageCounts(page);
  const routerBefore = { frames: counter.frames, lost: counter.lost };
  await page.evaluate(() => {
    (window as unknown as { __stall: { longest: number } }).__stall.longest = 0;
    (window as unknown as { __clicks: unknown[] }).__clicks = [];
  });
  // How late this process's own timers run (the load generator and Playwright share it).
  let nodeLag = 0;
  let lagLast = Date.now();
  const lagTimer = setInterval(() => {
    const now = Date.now();
    nodeLag = Math.max(nodeLag, now - lagLast - 50);
    lagLast = now;
  }, 50);

  const t0 = Date.now();
  const until = t0 + SECONDS * 1000;
  let progress = 0;
  let echoes = 0;
  let failed = 0;
  const slow = slowClients.map((c) =>
    c
      .callTool(
        { name: 'fixture__slow', arguments: { ms: SECONDS * 1000, steps: Math.min(10_000, SECONDS * 1000) } },
        { onprogress: () => (progress += 1), timeout: SECONDS * 1000 + 60_000, resetTimeoutOnProgress: true },
      )
      .catch(() => (failed += 1)),
  );
  const echo = echoClients.flatMap((c) =>
    Array.from({ length: 4 }, async () => {
      while (Date.now() < until) {
        try {
          await c.callTool({ name: 'fixture__echo', arguments: { text: 'stress' } });
          echoes += 1;
        } catch {
          failed += 1;
        }
      }
    }),
  );
  // Responsive while the storm runs: the operator pauses the tail (the view freezes, frames keep
  // being counted), selects a row and sees its detail, then resumes; each click answered in bound.
  await page.waitForTimeout(Math.min(3_000, (SECONDS * 1000) / 2));
  // STRESS_PROFILE=1: a CPU profile of the page during the storm (results/frames-stress.cpuprofile,
  // the top self-time functions printed).
  const cdp = process.env.STRESS_PROFILE === '1' ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.start');
  }
  // One round trip into the page (no actionability checks): how long Playwright's own path takes.
  const tr = Date.now();
  await page.evaluate(() => 1);
  const roundTripMs = Date.now() - tr;
  const t1 = Date.now();
  await page.getByTestId('pause').click({ timeout: ACTION_TIMEOUT_MS });
  await expect(page.getByTestId('pause')).toHaveText(/resume/, { timeout: ACTION_TIMEOUT_MS });
  const clickMs = Date.now() - t1;
  await page.getByTestId('frames-downstream').locator('.frow').first().click({ timeout: ACTION_TIMEOUT_MS });
  await expect(page.getByTestId('frame-detail')).toContainText('correlation', { timeout: ACTION_TIMEOUT_MS });
  const detailMs = Date.now() - t1;
  await page.screenshot({ path: path.join(SHOTS, 'frames-stress.png') });
  await page.getByTestId('pause').click({ timeout: ACTION_TIMEOUT_MS });
  await expect(page.getByTestId('pause')).toHaveText(/pause/, { timeout: ACTION_TIMEOUT_MS });

  if (cdp) {
    await page.waitForTimeout(2_000);
    const { profile } = await cdp.send('Profiler.stop');
    mkdirSync(path.join(UI_DIR, 'e2e', 'results'), { recursive: true });
    writeFileSync(path.join(UI_DIR, 'e2e', 'results', 'frames-stress.cpuprofile'), JSON.stringify(profile));
    const self = new Map<string, number>();
    const dt = new Map<number, number>();
    profile.samples?.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
    for (const n of profile.nodes) {
      const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`;
      self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0));
    }
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 25);
    console.log('profile (self ms):\n' + top.map(([k, us]) => `${(us / 1000).toFixed(0).padStart(7)}  ${k}`).join('\n'));
  }
  // The offered rate over the storm window itself (the slow calls run on past it: the fixture's
  // steps take longer than ms/steps under load).
  await page.waitForTimeout(Math.max(0, until - Date.now()));
  const windowFrames = counter.frames - routerBefore.frames;
  const windowSecs = (Date.now() - t0) / 1000;
  await Promise.all([...slow, ...echo]);
  clearInterval(lagTimer);
  const secs = (Date.now() - t0) / 1000;
  await Promise.all([...slowClients, ...echoClients].map((c) => c.close()));

  // Let the last batches arrive: until the router's count and the page's stop moving.
  let after = await pageCounts(page);
  let last = -1;
  for (let i = 0; i < 60; i++) {
    await page.waitForTimeout(500);
    after = await pageCounts(page);
    const sent = counter.frames - routerBefore.frames;
    if (after.received - before.received + after.lost - before.lost >= sent && sent === last) break;
    last = sent;
  }
  counter.close();

  const sent = counter.frames - routerBefore.frames;
  const routerLost = counter.lost - routerBefore.lost;
  const received = after.received - before.received;
  const lost = after.lost - before.lost;
  const result = {
    seconds: secs,
    slow_calls: SLOW_CALLS,
    progress_notifications: progress,
    echo_calls: echoes,
    failed,
    frames_sent: sent,
    frames_per_second_overall: Math.round(sent / secs),
    window_seconds: windowSecs,
    window_frames: windowFrames,
    frames_per_second: Math.round(windowFrames / windowSecs),
    router_counter_lost: routerLost,
    frames_received_by_page: received,
    frames_shown: after.shown,
    lagged_reported: lost,
    page_counts: after.counts,
    longest_stall_ms: Math.round(after.stall.longest),
    long_tasks: after.stall.longTasks,
    click_to_pause_ms: clickMs,
    pause_and_select_to_detail_ms: detailMs,
    page_click_latencies_ms: after.clicks,
    node_event_loop_lag_ms: nodeLag,
    playwright_round_trip_ms: roundTripMs,
  };
  console.log('frame stress:', JSON.stringify(result));
  mkdirSync(path.join(UI_DIR, 'e2e', 'results'), { recursive: true });
  writeFileSync(path.join(UI_DIR, 'e2e', 'results', 'frames-stress.json'), JSON.stringify(result, null, 2));
  test.info().annotations.push({ type: 'frame stress', description: JSON.stringify(result) });

  const rate = Math.round(windowFrames / windowSecs);
  console.log(
    `frame stress: offered ${rate} frames/s over the storm window (${windowFrames} frames in ${windowSecs.toFixed(1)} s)` +
      (rate < 5_000 ? ' — below 5 000 frames/s: the load generator on this machine is the limit, not the page' : '') +
      `; shown ${after.shown}, received ${received}, reported lagged ${lost}; longest stall ${result.longest_stall_ms} ms;` +
      ` page-side click latencies ${after.clicks.map((c) => `${c.target} ${c.ms} ms`).join(', ')};` +
      ` wall clock (Playwright, shares the load generator's process, whose timers ran up to ${nodeLag} ms late; one page.evaluate round trip ${roundTripMs} ms): pause ${clickMs} ms, pause+select+detail ${detailMs} ms`,
  );
  if (routerLost > 0) {
    console.log(`frame stress: the counting viewer (this Node process) fell behind by ${routerLost}: the sent count is a lower bound`);
  }

  expect(failed).toBe(0);
  // Page side: every click answered within the bound.
  expect(after.clicks.length, 'clicks seen by the page (pause, row, resume)').toBeGreaterThanOrEqual(3);
  for (const c of after.clicks) expect(c.ms, `click on ${c.target} answered by the page`).toBeLessThanOrEqual(CLICK_BOUND_MS);
  if (MIN_RATE !== null) expect(rate, 'offered frames/s (STRESS_MIN_RATE)').toBeGreaterThanOrEqual(MIN_RATE);
  // No silent loss: every frame the router sent reached the page or is reported lost. `lagged`
  // counts events of every kind, so with drops the page's figure is bounded, not exact; when the
  // counting viewer itself lagged, its count is a lower bound.
  // The page's and the counter's baselines are taken a moment apart, and the stack's other
  // upstreams (three chaos replicas, the built-ins) are health-probed on their own schedule: a
  // probe exchange (a request and its answer, two frames per leg) can fall between the two
  // baselines and be counted by one side only. That is not a loss; anything beyond it is.
  if (lost === 0 && routerLost === 0) expect(Math.abs(received - sent), `page ${received} vs router ${sent}`).toBeLessThanOrEqual(BACKGROUND_SLACK);
  else {
    expect(received).toBeLessThanOrEqual(sent + routerLost + BACKGROUND_SLACK);
    expect(received + lost + BACKGROUND_SLACK).toBeGreaterThanOrEqual(sent);
  }
});
