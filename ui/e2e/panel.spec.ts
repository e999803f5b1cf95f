/**
 * The panel against a really running `switchboard serve` with real upstreams: every view is
 * opened with live data, checked the way an operator would look at it, and photographed into
 * e2e/screenshots/<view>.png.
 */
import { test, expect, type Page } from '@playwright/test';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CHAOS, PROBE_SECS, readStack, SHOTS, THERMAL_DIR } from './stack';
import { allTools, sdkClient } from './mcp';

// Tests share one stack; they run in file order (one worker), the fixture-killing one last.

const stack = readStack();

async function openPanel(page: Page, view = 'overview') {
  await page.goto(stack.panel);
  await expect(page.getByTestId('conn')).toHaveText(/live/);
  await page.locator(`nav [data-view="${view}"]`).click();
  await expect(page.getByTestId(`view-${view}`)).toBeVisible();
}

async function shot(page: Page, name: string) {
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

test('the admin API refuses requests without the token, and foreign origins', async ({ request }) => {
  const none = await request.get(`${stack.origin}/api/overview`);
  expect(none.status()).toBe(401);
  const foreign = await request.get(`${stack.origin}/api/overview`, {
    headers: { Authorization: `Bearer ${stack.token}`, Origin: 'http://evil.example' },
  });
  expect(foreign.status()).toBe(403);
  const ok = await request.get(`${stack.origin}/api/overview`, { headers: { Authorization: `Bearer ${stack.token}` } });
  expect(ok.status()).toBe(200);
});

test('overview: every server ready, the token is out of the URL, live figures', async ({ page }) => {
  await openPanel(page);
  expect(page.url()).not.toContain('token=');
  await expect(page.getByTestId('card-ready').locator('.v')).toHaveText(String(5 + CHAOS.length), { timeout: 60_000 });
  await expect(page.getByTestId('card-unavailable').locator('.v')).toHaveText('0');
  for (const s of ['vision', 'knowledge', 'reasoning', 'everything', 'fixture', ...CHAOS]) {
    await expect(page.getByTestId(`ov-server-${s}`)).toContainText('ready');
  }
  // Some traffic, so the chart and the rate have something to show.
  const c = await sdkClient(stack.mcp);
  for (let i = 0; i < 20; i++) await c.callTool({ name: 'everything__echo', arguments: { message: `overview ${i}` } });
  await c.close();
  await expect(page.getByTestId('live-chart').locator('canvas').first()).toBeVisible();
  await expect(page.getByTestId('card-rate').locator('.v')).not.toHaveText('0.0', { timeout: 15_000 });
  await shot(page, 'overview');
});

test('frames: a tools/call by the SDK client shows on both legs, linked', async ({ page }) => {
  await openPanel(page, 'frames');
  const c = await sdkClient(stack.mcp);
  const tools = await allTools(c);
  expect(tools).toContain('everything__echo');
  const r = await c.callTool({ name: 'everything__echo', arguments: { message: 'hello from the e2e test' } });
  expect(JSON.stringify(r)).toContain('hello from the e2e test');
  await c.close();

  await page.getByTestId('frame-filter').fill('method:tools/call "hello from the e2e test"');
  const down = page.getByTestId('frames-downstream').locator('.frow[data-leg="downstream"]').first();
  await expect(down).toBeVisible();
  const up = page.getByTestId('frames-upstream').locator('.frow[data-leg="upstream"]').first();
  await expect(up).toBeVisible();
  const corr = await down.getAttribute('data-corr');
  expect(corr).not.toBe('');
  expect(await up.getAttribute('data-corr')).toBe(corr);

  // Clear the filter: selecting the client's request lights up the upstream frames it caused.
  await page.getByTestId('frame-filter').fill('');
  await page.locator(`[data-testid="frames-downstream"] .frow[data-corr="${corr}"]`).first().click();
  await expect(page.getByTestId('detail-corr')).toHaveText(String(corr));
  await expect(page.locator(`[data-testid="frames-upstream"] .frow.linked[data-corr="${corr}"]`).first()).toBeVisible();
  await expect(page.getByTestId('linked')).toContainText('upstream');
  await expect(page.getByTestId('raw-body')).toContainText('tools/call');
  await shot(page, 'frames');
});

test('handshakes: both legs as sequence diagrams with versions and capabilities', async ({ page }) => {
  const c = await sdkClient(stack.mcp, 'legacy', 'handshake-client');
  await c.close();
  await openPanel(page, 'handshakes');
  const list = page.getByTestId('handshake-list');
  await expect(list).toContainText('everything');
  await expect(list).toContainText('upstream');
  await list.locator('tr', { hasText: 'everything' }).first().click();
  await expect(page.getByTestId('sequence')).toContainText(/initialize|server\/discover/);
  await expect(page.getByTestId('chosen')).not.toHaveText('—');
  await expect(page.getByTestId('caps')).toContainText('tools');
  await shot(page, 'handshakes');
});

test('registry: the servers × tools matrix, a schema, and the $ref-broken tool quarantined', async ({ page }) => {
  await openPanel(page, 'registry');
  const matrix = page.getByTestId('matrix');
  await expect(matrix).toContainText('fixture');
  await expect(matrix).toContainText('analyze_thermal_image');
  const q = page.locator('[data-testid^="q-fixture-"]').first();
  await expect(q).toBeVisible();
  await q.click();
  await expect(page.getByTestId('quarantine-error')).toContainText(/\$ref|\$defs|does not exist/);
  await expect(page.getByTestId('quarantine')).toContainText('fixture');
  await matrix.locator('tr', { hasText: 'analyze_thermal_image' }).locator('td.cell.has').first().click();
  await expect(page.getByTestId('schema-tree').first()).toContainText('image');
  await expect(page.getByTestId('schema-tree').first()).toContainText('required');
  // Clicking the far-right cell scrolled the (eight servers wide) matrix: back to its tool names.
  await matrix.evaluate((el) => {
    for (let e: Element | null = el; e; e = e.parentElement) e.scrollLeft = 0;
  });
  await shot(page, 'registry');
});

test('sessions & affinity: the chaos group, its bindings, and routing decisions of a 2025-11-25 session', async ({ page, request }) => {
  const auth = { Authorization: `Bearer ${stack.token}` };
  // The three chaos replicas form one detected group; the fixture stays a server of its own.
  await expect
    .poll(async () => ((await (await request.get(`${stack.origin}/api/groups`, { headers: auth })).json()) as { name: string; members: unknown[] }[]).map((g) => `${g.name}:${g.members.length}`), { timeout: 60_000 })
    .toContain('chaos:3');
  const all = (await (await request.get(`${stack.origin}/api/groups?all=true`, { headers: auth })).json()) as { name: string; members: { server: string }[] }[];
  expect(all.find((g) => g.name === 'fixture')?.members.map((m) => m.server)).toEqual(['fixture']);

  // A legacy (2025-11-25) session: its session id is the affinity key.
  const c = await sdkClient(stack.mcp, 'legacy', 'affinity-client');
  const tools = await allTools(c);
  const whoami = tools.find((t) => /(^|__)whoami$/.test(t));
  const read = tools.find((t) => /(^|__)read$/.test(t) && t.includes('chaos'));
  expect(whoami, tools.join(', ')).toBeTruthy();
  expect(read, tools.join(', ')).toBeTruthy();
  expect(tools.filter((t) => /whoami$/.test(t))).toHaveLength(1);
  await c.callTool({ name: 'everything__echo', arguments: { message: 'session' } });
  for (let i = 0; i < 4; i++) await c.callTool({ name: whoami as string, arguments: {} });
  for (let i = 0; i < 4; i++) await c.callTool({ name: read as string, arguments: { key: `k${i}` } });
  // Another session, so the group holds more than one binding.
  const c2 = await sdkClient(stack.mcp, 'legacy', 'second-client');
  for (let i = 0; i < 3; i++) await c2.callTool({ name: whoami as string, arguments: {} });

  await openPanel(page, 'sessions');
  await expect(page.getByTestId('view-sessions').locator('h1')).toHaveText('Sessions & affinity');
  const group = page.getByTestId('group-chaos');
  await expect(group).toBeVisible({ timeout: 15_000 });
  for (const s of CHAOS) await expect(page.getByTestId('members-chaos')).toContainText(s);
  await expect(page.getByTestId('bindings-chaos').locator('tbody tr')).toHaveCount(2, { timeout: 15_000 });
  await expect(page.getByTestId('bindings-chaos')).toContainText('affinity-client');
  await expect(page.getByTestId('group-fixture')).toHaveCount(0);

  const decisions = page.getByTestId('decisions');
  await expect(decisions.locator('tbody tr', { hasText: 'chaos' }).first()).toBeVisible();
  // Clicking the session filters the decisions to its key: 8 chaos calls and the echo.
  const row = page.getByTestId('sessions-table').locator('tbody tr', { hasText: 'affinity-client' });
  await row.click();
  await expect(page.getByTestId('key-filter')).toContainText('affinity-client');
  await expect(decisions.locator('tbody tr')).toHaveCount(9);
  await expect(decisions.locator('tbody tr').first()).toContainText('affinity-client');
  // The same key in the admin API, asked by fingerprint.
  const key = await row.getAttribute('data-key');
  expect(key).toMatch(/^k:[0-9a-f]{12}$/);
  const api = (await (await request.get(`${stack.origin}/api/decisions?key=${key}`, { headers: auth })).json()) as { key: string; chosen: string; group: string }[];
  expect(api.filter((d) => d.group === 'chaos')).toHaveLength(8);
  // Affinity: every chaos call of the session went to one replica.
  expect(new Set(api.filter((d) => d.group === 'chaos').map((d) => d.chosen)).size).toBe(1);

  // Live: a new call shows up on top without a reload.
  await c.callTool({ name: read as string, arguments: { key: 'live' } });
  await expect(decisions.locator('tbody tr')).toHaveCount(10);

  // The bound replica refuses calls as overloaded (HTTP 503): the call is retried elsewhere,
  // and that attempt is a decision of its own, flagged as a retry, the bound replica excluded.
  const bound = api.find((d) => d.group === 'chaos')?.chosen as string;
  const control = new URL('/chaos/faults', stack.chaos.find((x) => x.name === bound)?.url).toString();
  expect((await request.post(control, { data: { overload: true } })).ok()).toBe(true);
  await c.callTool({ name: read as string, arguments: { key: 'after overload' } });
  expect((await request.post(control, { data: { overload: false } })).ok()).toBe(true);
  const retry = decisions.locator('tbody tr', { hasText: 'retry' }).first();
  await expect(retry).toBeVisible();
  // Let the bindings pane's next poll (every 2 s) show where the key went after the retry.
  await page.waitForTimeout(2_200);

  // Group filter: only the chaos group's decisions (the session's echo went to "everything").
  await page.getByTestId('group-filter').selectOption('chaos');
  await expect(decisions.locator('tbody tr', { hasText: 'everything' })).toHaveCount(0);
  await expect(decisions.locator('tbody tr').first()).toContainText('chaos');
  await shot(page, 'sessions');
  await retry.click();
  const detail = page.getByTestId('decision-detail');
  await expect(detail).toBeVisible();
  await expect(page.getByTestId('candidates').locator('tbody tr.cand')).toHaveCount(3);
  await expect(page.getByTestId('candidates').locator('tr[data-chosen="true"]')).toHaveCount(1);
  await expect(page.getByTestId('candidates').locator('tr[data-chosen="true"]')).not.toContainText(bound);
  await expect(page.getByTestId('decision-excluded')).toHaveText(bound);
  await expect(page.getByTestId('decision-reason')).not.toBeEmpty();
  // Keyboard: j moves to the next decision.
  const before = await page.getByTestId('decision-detail').locator('dd').last().textContent();
  await page.keyboard.press('j');
  await expect(page.getByTestId('decision-detail').locator('dd').last()).not.toHaveText(before ?? '');
  await page.keyboard.press('k');
  await shot(page, 'sessions-decision');
  await page.getByTestId('theme').click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await shot(page, 'sessions-light');
  await c.close();
  await c2.close();
});

test('diagnosis: dropping wm01_200_deg_neutral.jpg on a panel ends major with the hotspot outlined', async ({ page }) => {
  await openPanel(page, 'diagnosis');
  await page.getByTestId('equipment').selectOption('panel');
  await page.getByTestId('file-input').setInputFiles(path.join(THERMAL_DIR, 'wm01_200_deg_neutral.jpg'));
  for (const n of ['vision', 'knowledge', 'reasoning']) {
    await expect(page.getByTestId(`flow-node-${n}`)).toHaveAttribute('data-status', 'done', { timeout: 90_000 });
  }
  await expect(page.getByTestId('run-outcome')).toHaveText('ok');
  await expect(page.getByTestId('thermal-canvas')).toBeVisible();
  await expect(page.getByTestId('hotspot')).toBeVisible();
  await expect(page.getByTestId('hottest')).toBeVisible();
  await expect(page.getByTestId('severity')).toHaveText(/major/i);
  await expect(page.getByTestId('repair').locator('li').first()).toBeVisible();
  const box = await page.getByTestId('thermal').boundingBox();
  if (box) await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await expect(page.getByTestId('pointer-temp')).toContainText('°C');
  await shot(page, 'diagnosis');
});

test('diagnosis: a corrupt image shows the reader’s error and the failed run is in the history', async ({ page }, info) => {
  await openPanel(page, 'diagnosis');
  const bad = info.outputPath('corrupt.jpg');
  writeFileSync(bad, Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe1]), Buffer.from('this is not a thermal image '.repeat(20))]));
  await page.getByTestId('equipment').selectOption('panel');
  // A synthetic drop on the page, as a user's drag and drop would deliver it.
  const bytes = [...(await import('node:fs')).readFileSync(bad)];
  await page.evaluate((data) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(data)], 'corrupt.jpg', { type: 'image/jpeg' }));
    window.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, bytes);
  await expect(page.getByTestId('thermal-error')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('flow-node-vision')).toHaveAttribute('data-status', 'failed', { timeout: 60_000 });
  await expect(page.getByTestId('run-history').locator('tr[data-outcome="failed"]').first()).toBeVisible({ timeout: 30_000 });
  await shot(page, 'diagnosis-corrupt');
  // Reopen the earlier successful run from the history: its graph, image and grade come back.
  await page.getByTestId('run-history').locator('tr[data-outcome="ok"]').first().click();
  await expect(page.getByTestId('run-outcome')).toHaveText('ok');
  await expect(page.getByTestId('flow-node-reasoning')).toHaveAttribute('data-status', 'done');
  await expect(page.getByTestId('hotspot')).toBeVisible();
  await expect(page.getByTestId('severity')).toHaveText(/major/i);
  await shot(page, 'diagnosis-reopened');
});

test('servers: processes with pids; killing the fixture turns it red', async ({ page }) => {
  await openPanel(page, 'servers');
  const row = page.getByTestId('server-row-everything');
  await expect(row).toContainText('ready');
  await row.click();
  await expect(page.getByTestId('server-detail')).toContainText('everything');
  await expect(page.getByTestId('stderr')).toBeVisible();
  await shot(page, 'servers');
  // SIGKILL the HTTP fixture: its port stops answering at once, so the router's next probe
  // (every PROBE_SECS, the e2e config's refresh_interval_secs) fails to connect.
  process.kill(stack.pids.fixture, 'SIGKILL');
  // A client still calling it is how the router notices soonest (besides its probes).
  const c = await sdkClient(stack.mcp);
  for (let i = 0; i < 3; i++) await c.callTool({ name: 'fixture__echo', arguments: { text: 'anyone there?' } }).catch(() => undefined);
  await c.close();
  // Within the probe interval (plus the probe's own connect attempt).
  await expect(page.getByTestId('server-row-fixture')).toHaveAttribute('data-state', /unavailable|degraded/, { timeout: (PROBE_SECS + 2) * 1000 });
  await page.getByTestId('server-row-fixture').click();
  await shot(page, 'servers-unavailable');
});

test('light theme and keyboard navigation', async ({ page }) => {
  await openPanel(page, 'overview');
  await page.keyboard.press('6');
  await expect(page.getByTestId('view-frames')).toBeVisible();
  await page.keyboard.press('/');
  await expect(page.getByTestId('frame-filter')).toBeFocused();
  await page.keyboard.press('Escape');
  await page.keyboard.press('j');
  await expect(page.getByTestId('frame-detail')).not.toContainText('Select a frame');
  await page.getByTestId('theme').click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await page.keyboard.press('1');
  await shot(page, 'overview-light');
});
