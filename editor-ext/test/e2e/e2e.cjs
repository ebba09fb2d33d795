// The end-to-end scenarios, driven through the browser like a person would: status bar, asks
// answered by clicking, the diff editor, the history view, the Problems panel.
// Usage: node e2e.cjs URL WORKSPACE REQUEST_DIR ARTIFACTS USER_DATA   (run by run.sh)
'use strict';
const { chromium } = require('playwright-core');
const fs = require('node:fs');
const path = require('node:path');

const [URL_, WS, REQ, ART, USER_DATA] = process.argv.slice(2);
const T0 = Date.now();
const log = (...a) => console.log(`  [${((Date.now() - T0) / 1000).toFixed(1)}s]`, ...a);

/** Waits for a file the extension writes (the test command's result); JSON-parsed. */
async function waitForJSON(p, ms = 60000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    try { return JSON.parse(fs.readFileSync(p, 'utf8')); } catch { /* not there yet */ }
  }
  throw new Error('timed out waiting for ' + p);
}

let page;
let shot = 0;
async function screenshot(name) {
  const file = path.join(ART, `${String(++shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Runs a command from the palette; retries while the extension's commands are not registered yet. */
async function runCommand(title, ms = 90000) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  for (let tries = 1, end = Date.now() + ms; ; tries++) {
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible', timeout: 15000 });
    await input.fill('>' + title);
    try { await row.waitFor({ timeout: 3000 }); break; } catch (e) { if (Date.now() > end) throw e; }
    await page.keyboard.press('Escape');
    log(`"${title}" not in the palette yet (try ${tries})`);
  }
  await page.keyboard.press('Enter');
}

/** Issues tools/execute through the extension's test command (a keybinding with a request file). */
let callNo = 0;
function execute(tool, args, extra = {}) {
  const n = ++callNo;
  const resultFile = path.join(REQ, `result-${n}.json`);
  fs.writeFileSync(path.join(REQ, 'request.json'), JSON.stringify({ tool, args, sessionID: 'e2e-session', callID: `e2e-call-${n}`, resultFile, ...extra }));
  return {
    press: async () => {
      // The keybinding's command exists once the extension runs; its daemon once the status says so.
      await page.locator('.statusbar-item', { hasText: /toolsd: \d+ tools/ }).waitFor({ timeout: 90000 });
      await page.locator('.monaco-workbench').click({ position: { x: 700, y: 450 } }).catch(() => {});
      await page.keyboard.press('Control+Alt+Shift+F10');
    },
    result: (ms) => waitForJSON(resultFile, ms),
  };
}

function toast(text) {
  return page.locator('.notification-toast', { hasText: text }).last();
}

/**
 * Clicks a button of the notification that shows text, until the notification goes away (a click
 * that lands while the toast still slides in can be lost).
 */
async function clickToastButton(text, button) {
  const t = toast(text);
  await t.waitFor({ state: 'visible', timeout: 30000 });
  for (let i = 1; ; i++) {
    await t.getByRole('button', { name: button, exact: true }).click();
    try { await t.waitFor({ state: 'hidden', timeout: 3000 }); return; } catch (e) { if (i === 3) throw e; }
    log(`"${button}" click did not close the notification; clicking again`);
  }
}

/** Right-clicks a row and picks an item of its context menu, by keyboard (a mouse click on a menu
 * that is still sliding in can be lost) once the menu has focus (keys pressed before go to the
 * tree), checking that the item about to run is the one asked for. */
async function contextMenu(row, label) {
  await row.click({ button: 'right' });
  const menu = page.locator('.context-view .monaco-menu').first();
  await menu.waitFor({ state: 'visible', timeout: 15000 });
  const items = await menu.locator('.action-item:not(.disabled) .action-label').allInnerTexts();
  const i = items.findIndex((t) => t.trim() === label);
  if (i < 0) throw new Error(`no "${label}" in the context menu: ${JSON.stringify(items)}`);
  await page.waitForFunction(() => {
    let a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return !!(a && a.closest && a.closest('.monaco-menu'));
  }, null, { timeout: 15000 });
  await page.keyboard.press('Home');
  for (let k = 0; k < i; k++) await page.keyboard.press('ArrowDown');
  await menu.locator('.action-item.focused .action-label').filter({ hasText: label }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  await menu.waitFor({ state: 'hidden', timeout: 15000 });
}

/** The pane of a view in the side bar, by its title. */
function view(title) {
  return page.locator('.pane', { has: page.locator('.pane-header', { hasText: title }) }).first();
}

/** Opens the toolsd views (Running, Tool Calls, Tools). */
async function openToolsdViews() {
  const header = page.locator('.pane-header', { hasText: 'Tool Calls' }).first();
  if (await header.isVisible()) return;
  await runCommand('toolsd: Show Tool Calls');
  await header.waitFor({ timeout: 15000 });
}

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('toolsd sleeps until its view is opened, then starts its daemon and shows the tool count', async () => {
  // The workspace has no .toolsd/ yet: nothing of toolsd runs until the person opens it. The
  // extensions that wait for the end of the start have started by the time this holds.
  await waitFor(() => activations().some((l) => l.includes("activationEvent: 'onStartupFinished'")), 'the extension host to finish its start', 90000);
  if (toolsdActivations().length) throw new Error(`toolsd was activated before anything of it was opened: ${toolsdActivations()}`);
  if (outputChannelLines().some((l) => l.includes('[client] starting '))) throw new Error('a daemon was started before toolsd was opened');
  await page.locator('.activitybar .action-item .action-label[aria-label^="toolsd"]').first().click();
  await page.locator('.pane-header', { hasText: 'Tool Calls' }).first().waitFor({ timeout: 15000 });
  await waitFor(() => toolsdActivations().length > 0, 'toolsd to be activated by its view');
  if (!/activationEvent: 'onView:toolsd\./.test(toolsdActivations()[0])) throw new Error(`toolsd was activated by something else: ${toolsdActivations()[0]}`);
  log(toolsdActivations()[0].replace(/^.*_doActivateExtension /, 'activated: '));
  const item = page.locator('.statusbar-item', { hasText: /toolsd: \d+ tools/ });
  await item.waitFor({ timeout: 90000 });
  const text = (await item.innerText()).trim();
  const n = Number(/toolsd: (\d+) tools/.exec(text)[1]);
  if (!(n >= 2)) throw new Error(`status bar says "${text}"`);
  log(`status bar: "${text}"`);
  await screenshot('status-bar');
  // A click opens the log: the output channel with the daemon's stderr.
  await item.click();
  await page.locator('.part.panel .view-line', { hasText: /running\s\(pid\s\d+\)/ }).first().waitFor({ timeout: 15000 });
  await screenshot('log');
  await page.keyboard.press('Escape');
  // No toolsd.path is set: the daemon is the one the vsix carries (run.sh exports its path).
  const starting = () => outputChannelLines().filter((l) => l.includes('[client] starting '));
  await waitFor(() => starting().length > 0, 'the start of the daemon in the toolsd output channel');
  const bundled = `[client] starting ${process.env.TOOLSD_BIN} `;
  if (!starting().every((l) => l.includes(bundled))) throw new Error(`the extension did not start its bundled ${process.env.TOOLSD_BIN}: ${JSON.stringify(starting())}`);
  log(`the extension started its bundled daemon: ${starting()[0].replace(/^.*\[client\] /, '')}`);
});

scenario('a bash call raises an ask; "Allow once" lets it complete', async () => {
  // The redirect writes a file: toolsd asks for the write (edit) and for the command (bash).
  const call = execute('bash', { command: 'echo allowed-by-e2e > allowed.txt', description: 'write allowed.txt' });
  await call.press();
  await toast('bash wants to write allowed.txt').waitFor({ state: 'visible', timeout: 30000 });
  await screenshot('bash-write-ask');
  await clickToastButton('bash wants to write allowed.txt', 'Allow once');
  await toast('bash wants to run `echo allowed-by-e2e').waitFor({ state: 'visible', timeout: 30000 });
  await screenshot('bash-run-ask');
  await clickToastButton('bash wants to run `echo allowed-by-e2e', 'Allow once');
  const r = await call.result();
  if (r.status !== 'completed') throw new Error('result: ' + JSON.stringify(r));
  const body = fs.readFileSync(path.join(WS, 'allowed.txt'), 'utf8');
  if (body.trim() !== 'allowed-by-e2e') throw new Error('allowed.txt: ' + body);
  log('bash call completed after "Allow once"');
});

scenario('"Always allow…" for the session: the next matching call runs without an ask', async () => {
  const first = execute('bash', { command: 'echo always-1', description: 'echo always-1' });
  await first.press();
  await clickToastButton('wants to run `echo always-1`', 'Always allow…');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 15000 });
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'echo *' }).first().waitFor({ timeout: 15000 });
  await screenshot('always-patterns');
  await page.keyboard.press('Enter'); // the suggested patterns are preselected
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'This session' }).first().waitFor({ timeout: 15000 });
  await screenshot('always-scope');
  await page.keyboard.press('Enter'); // "This session" is the first choice
  const r1 = await first.result();
  if (r1.status !== 'completed') throw new Error('first: ' + JSON.stringify(r1));
  const second = execute('bash', { command: 'echo always-2', description: 'echo always-2' });
  await second.press();
  const r2 = await second.result(30000);
  if (r2.status !== 'completed' || !/always-2/.test(r2.output)) throw new Error('second: ' + JSON.stringify(r2));
  if (await toast('echo always-2').isVisible()) throw new Error('the second call asked again');
  log('"echo *" allowed for the session; echo always-2 ran without an ask');
});

scenario('a running call shows in the Running view with its live title and output tail', async () => {
  const flag = path.join(WS, 'go.flag');
  const call = execute('bash', {
    command: 'echo tick-1; echo tick-2; while [ ! -e go.flag ]; do sleep 0.1; done; echo finished',
    description: 'wait for go.flag',
  });
  await call.press();
  await openToolsdViews();
  // toolsd asks for each command of the line not yet allowed: answer until the output flows. A
  // notification that hid (the palette was open, say) is reached through the status bar's asks item.
  const running = view('Running');
  const tick = running.locator('.monaco-list-row', { hasText: 'tick-2' }).first();
  const ask = toast('wants to run `echo tick-1; echo tick-2');
  for (let i = 0; ; i++) {
    if (i === 6) throw new Error('still asking after 5 answers');
    const which = await Promise.race([
      tick.waitFor({ timeout: 5000 }).then(() => 'running'),
      ask.waitFor({ state: 'visible', timeout: 5000 }).then(() => 'ask'),
    ]).catch(() => 'hidden');
    if (which === 'running') break;
    if (which === 'hidden') {
      await page.locator('.statusbar-item', { hasText: /^\s*\d+ asks?\b/ }).first().click();
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'echo tick-1' }).first().waitFor({ timeout: 15000 });
      await screenshot('pending-asks-pick');
      await page.keyboard.press('Enter');
      continue;
    }
    await clickToastButton('wants to run `echo tick-1; echo tick-2', 'Allow once');
  }
  await running.locator('.monaco-list-row', { hasText: 'wait for go.flag' }).first().waitFor({ timeout: 30000 });
  await screenshot('running');
  fs.writeFileSync(flag, '');
  const r = await call.result();
  if (r.status !== 'completed' || !/finished/.test(r.output)) throw new Error('result: ' + JSON.stringify(r));
  await tick.waitFor({ state: 'detached', timeout: 15000 });
  log('the running call showed its output tail and left the view when it ended');
});

scenario('a rejected ask carries its message to the model', async () => {
  const call = execute('bash', { command: 'touch rejected.txt', description: 'touch rejected.txt' });
  await call.press();
  await clickToastButton('touch rejected.txt', 'Reject…');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 15000 });
  await input.fill('no new files here; edit hello.txt instead');
  await screenshot('reject-message');
  await page.keyboard.press('Enter');
  const r = await call.result();
  if (r.status !== 'error' || !/no new files here; edit hello\.txt instead/.test(r.error || '')) throw new Error('result: ' + JSON.stringify(r));
  if (fs.existsSync(path.join(WS, 'rejected.txt'))) throw new Error('the rejected command ran');
  log(`rejected; the model reads: ${r.error}`);
});

scenario('an edit ask opens the diff editor on the proposed change', async () => {
  const call = execute('edit', { filePath: 'hello.txt', oldString: 'world', newString: 'toolsd' });
  await call.press();
  await clickToastButton('wants to change hello.txt', 'Show diff');
  const diff = page.locator('.monaco-diff-editor').first();
  await diff.waitFor({ state: 'visible', timeout: 30000 });
  await page.locator('.tab', { hasText: 'proposed by edit' }).first().waitFor({ timeout: 15000 });
  await page.locator('.monaco-diff-editor .editor.modified .view-lines', { hasText: 'hello toolsd' }).first().waitFor({ timeout: 15000 });
  await page.locator('.monaco-diff-editor .editor.original .view-lines', { hasText: 'hello world' }).first().waitFor({ timeout: 15000 });
  await screenshot('edit-diff');
  await clickToastButton('wants to change hello.txt', 'Allow once');
  const r = await call.result();
  if (r.status !== 'completed') throw new Error('result: ' + JSON.stringify(r));
  const body = fs.readFileSync(path.join(WS, 'hello.txt'), 'utf8');
  if (body !== 'hello toolsd\n') throw new Error('hello.txt: ' + JSON.stringify(body));
  log('diff shown; edit applied after "Allow once"');
});

scenario('a destructive ask is a modal; its diff shows before "Allow once"', async () => {
  fs.writeFileSync(path.join(WS, 'doomed.txt'), 'last words\n');
  const call = execute('apply_patch', { patchText: '*** Begin Patch\n*** Delete File: doomed.txt\n*** End Patch' },
    { model: { providerID: 'openai', modelID: 'gpt-5' } });
  await call.press();
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'wants to change doomed.txt' });
  await dialog.waitFor({ state: 'visible', timeout: 30000 });
  await screenshot('destructive-modal');
  await dialog.locator('.monaco-button', { hasText: 'Show diff' }).click();
  await page.locator('.tab', { hasText: 'doomed.txt ↔ proposed by apply_patch' }).first().waitFor({ timeout: 15000 });
  await page.locator('.monaco-diff-editor .editor.original .view-lines', { hasText: 'last words' }).first().waitFor({ timeout: 15000 });
  // The modal comes back once the diff is open.
  await dialog.waitFor({ state: 'visible', timeout: 15000 });
  await screenshot('destructive-diff');
  await dialog.locator('.monaco-button', { hasText: 'Allow once' }).click();
  const r = await call.result();
  if (r.status !== 'completed') throw new Error('result: ' + JSON.stringify(r).slice(0, 300));
  if (fs.existsSync(path.join(WS, 'doomed.txt'))) throw new Error('doomed.txt is still there');
  log('modal answered after its diff; doomed.txt deleted');
});

scenario('a truncated call opens its full output from the Tool Calls view', async () => {
  const call = execute('bash', { command: 'seq 1 30000', description: 'count to 30000' });
  await call.press();
  await clickToastButton('seq 1 30000', 'Allow once');
  const r = await call.result();
  if (r.status !== 'completed' || !r.truncated || !r.outputID) throw new Error('result: ' + JSON.stringify(r).slice(0, 400));
  await openToolsdViews();
  const row = view('Tool Calls').locator('.monaco-list-row', { hasText: 'count to 30000' }).first();
  await row.waitFor({ timeout: 30000 });
  // Selecting the call opens its record as a page (calls/get rendered): what ran, why it was
  // allowed and who answered, with a link to the full output that opens it.
  await row.click();
  await page.locator('.tab', { hasText: 'Call: count to 30000' }).first().waitFor({ timeout: 15000 });
  const callPage = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  await callPage.locator('h2', { hasText: 'Why it was allowed' }).first().waitFor({ timeout: 15000 });
  await callPage.locator('li', { hasText: 'a person answered once' }).first().waitFor({ timeout: 15000 });
  await screenshot('call-page');
  await callPage.locator('a', { hasText: 'the full output' }).first().click();
  await page.locator('.tab', { hasText: `${r.outputID}.log` }).first().waitFor({ timeout: 30000 });
  await row.locator('.monaco-tl-twistie').click(); // expand: the truncated call has a "Full output" child
  const full = view('Tool Calls').locator('.monaco-list-row', { hasText: 'Full output' }).first();
  await full.waitFor({ timeout: 15000 });
  await screenshot('history');
  await full.click();
  await page.locator('.tab', { hasText: `${r.outputID}.log` }).first().waitFor({ timeout: 30000 });
  const editor = page.locator('.editor-instance .monaco-editor').first();
  await editor.locator('.view-lines', { hasText: /^1\s*2\s*3/ }).waitFor({ timeout: 15000 });
  await editor.click();
  await page.keyboard.press('Control+End');
  // One document holds 20,000 lines; its last line links the next page.
  await editor.locator('.view-line', { hasText: /^20000$/ }).first().waitFor({ timeout: 15000 });
  const link = editor.locator('.view-line', { hasText: '10000 more lines; next page' }).locator('.detected-link').first();
  await link.waitFor({ timeout: 15000 });
  await screenshot('full-output-page-1');
  await link.click({ modifiers: ['Control'] });
  await page.locator('.tab.active', { hasText: `${r.outputID}.log` }).first().waitFor({ timeout: 15000 });
  const page2 = page.locator('.editor-instance .monaco-editor').first();
  await page2.locator('.view-lines', { hasText: /^20001\s*20002/ }).waitFor({ timeout: 15000 });
  await page2.click();
  await page.keyboard.press('Control+End');
  await page2.locator('.view-line', { hasText: /^30000$/ }).first().waitFor({ timeout: 15000 });
  await screenshot('full-output-page-2');
  log(`full output ${r.outputID} opened in two pages; its last line is 30000`);
});

scenario('a broken project tool file shows a problem; fixing it clears the problem', async () => {
  const dir = path.join(WS, '.toolsd', 'tool');
  fs.mkdirSync(dir, { recursive: true });
  const bad = path.join(dir, 'bad.json');
  const status = page.locator('.statusbar-item', { hasText: /toolsd: \d+ tools/ });
  const before = Number(/toolsd: (\d+) tools/.exec(await status.innerText())[1]);
  fs.writeFileSync(bad, '{\n  "description": "a tool whose command is not a list",\n  "command": 5\n}\n');
  await runCommand('View: Focus Problems');
  const panel = page.locator('.markers-panel');
  await panel.waitFor({ state: 'visible', timeout: 15000 });
  await panel.locator('.monaco-list-row', { hasText: 'bad.json' }).first().waitFor({ timeout: 30000 });
  await screenshot('problem-shown');
  fs.writeFileSync(bad, '{\n  "description": "say hello",\n  "command": ["echo", "hello"]\n}\n');
  await panel.locator('.monaco-list-row', { hasText: 'bad.json' }).first().waitFor({ state: 'detached', timeout: 30000 });
  await page.locator('.statusbar-item', { hasText: `toolsd: ${before + 1} tools` }).waitFor({ timeout: 30000 });
  await openToolsdViews();
  await view('Tools').locator('.monaco-list-row', { hasText: 'project' }).first().waitFor({ timeout: 15000 });
  await screenshot('problem-cleared');
  log(`the problem appeared and cleared; the fixed tool joined the catalogue (${before} → ${before + 1} tools)`);
});

/** The lines of the log files under USER_DATA/logs whose name matches re. */
function logLines(re) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else if (re.test(e.name)) found.push(p);
    }
  };
  walk(path.join(USER_DATA, 'logs'));
  return found.flatMap((f) => fs.readFileSync(f, 'utf8').split('\n'));
}

/** The lines of the toolsd output channel, as VS Code keeps it on disk. */
const outputChannelLines = () => logLines(/-toolsd\.log$/);

/** The extension host's log lines that say an extension is activated, and by which event. */
const activations = () => logLines(/^remoteexthost\.log$/).filter((l) => l.includes('ExtensionService#_doActivateExtension'));
const toolsdActivations = () => activations().filter((l) => l.includes('_doActivateExtension toolsd.toolsd,'));

async function waitFor(cond, what, ms = 30000) {
  for (const end = Date.now() + ms; !cond(); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
  }
}

scenario('a daemon that crashes is restarted and serves again', async () => {
  const pids = () => outputChannelLines().map((l) => /running \(pid (\d+)\)/.exec(l)).filter(Boolean).map((m) => Number(m[1]));
  const before = pids();
  const pid = before[before.length - 1];
  process.kill(pid, 'SIGKILL');
  await waitFor(() => pids().length > before.length, 'the daemon to be restarted after the crash');
  const now = pids();
  if (now[now.length - 1] === pid) throw new Error('same pid after the restart');
  await page.locator('.statusbar-item', { hasText: /toolsd: \d+ tools/ }).waitFor({ timeout: 30000 });
  if (!outputChannelLines().some((l) => /exited unexpectedly \(signal SIGKILL\); restarting/.test(l))) throw new Error('the crash is not in the log');
  const call = execute('read', { filePath: 'hello.txt' });
  await call.press();
  const r = await call.result(30000);
  if (r.status !== 'completed' || !/hello toolsd/.test(r.output)) throw new Error('result: ' + JSON.stringify(r).slice(0, 300));
  await screenshot('after-crash');
  log(`killed daemon ${pid}; restarted as ${now[now.length - 1]}; read works`);
});

scenario('"Always allow…" for the workspace outlives a daemon restart', async () => {
  const first = execute('bash', { command: 'ls -1', description: 'list once' });
  await first.press();
  await clickToastButton('wants to run `ls -1`', 'Always allow…');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'ls *' }).first().waitFor({ timeout: 15000 });
  await page.keyboard.press('Enter');
  const ws = page.locator('.quick-input-list .monaco-list-row', { hasText: 'This workspace' }).first();
  await ws.waitFor({ timeout: 15000 });
  await ws.click();
  const r1 = await first.result();
  if (r1.status !== 'completed') throw new Error('first: ' + JSON.stringify(r1));
  const starts = () => outputChannelLines().filter((l) => /running \(pid \d+\)/.test(l)).length;
  const before = starts();
  await runCommand('toolsd: Restart Daemon');
  await waitFor(() => starts() > before, 'the daemon to start again after toolsd: Restart Daemon');
  const second = execute('bash', { command: 'ls -a', description: 'list again' }, { sessionID: 'another-session' });
  await second.press();
  const r2 = await second.result(30000);
  if (r2.status !== 'completed' || !/hello\.txt/.test(r2.output)) throw new Error('second: ' + JSON.stringify(r2).slice(0, 300));
  log('"ls *" remembered for the workspace: another session ran ls -a after a restart without an ask');
});

scenario('an agent\'s bash call changes two files; "Show Changes" shows them, "Revert" puts them back', async () => {
  fs.writeFileSync(path.join(WS, 'notes-a.txt'), 'draft one\n');
  fs.writeFileSync(path.join(WS, 'notes-b.txt'), 'draft two\n');
  const call = execute('bash', { command: 'sed -i s/draft/final/ notes-a.txt notes-b.txt', description: 'finalize the notes' });
  await call.press();
  // toolsd asks for the files sed writes (edit) and for the command (bash): allow each once.
  let r;
  for (let i = 0; !r; i++) {
    if (i === 6) throw new Error('still asking after 5 answers');
    const ask = toast('sed -i s/draft/final/').or(toast('notes-a.txt'));
    const which = await Promise.race([
      call.result(4000).then((v) => { r = v; return 'done'; }),
      ask.first().waitFor({ state: 'visible', timeout: 4000 }).then(() => 'ask'),
    ]).catch(() => 'none');
    if (which === 'ask') {
      await ask.first().getByRole('button', { name: 'Allow once', exact: true }).click().catch(() => {});
    }
  }
  if (r.status !== 'completed') throw new Error('result: ' + JSON.stringify(r));
  for (const [f, want] of [['notes-a.txt', 'final one\n'], ['notes-b.txt', 'final two\n']]) {
    const body = fs.readFileSync(path.join(WS, f), 'utf8');
    if (body !== want) throw new Error(`${f} after the call: ${JSON.stringify(body)}`);
  }
  await openToolsdViews();
  await runCommand('toolsd: Refresh Tool Calls');
  const row = view('Tool Calls').locator('.monaco-list-row', { hasText: 'finalize the notes' }).first();
  await row.waitFor({ timeout: 30000 });
  await row.locator('.label-description', { hasText: '2 files changed' }).waitFor({ timeout: 15000 });
  // Show Changes from the call's context menu: both files in the multi-file diff editor.
  await contextMenu(row, 'Show Changes');
  await page.locator('.tab', { hasText: 'Changes of call finalize the notes' }).first().waitFor({ timeout: 30000 });
  for (const f of ['notes-a.txt', 'notes-b.txt']) {
    await page.locator('.multiDiffEntry', { hasText: f }).first().waitFor({ timeout: 30000 });
  }
  await page.locator('.monaco-diff-editor .editor.original .view-lines', { hasText: 'draft one' }).first().waitFor({ timeout: 30000 });
  await page.locator('.monaco-diff-editor .editor.modified .view-lines', { hasText: 'final one' }).first().waitFor({ timeout: 30000 });
  await screenshot('show-changes');
  // Revert: a modal lists the files; confirming puts them back.
  await contextMenu(row, 'Revert…');
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'Revert call finalize the notes?' });
  await dialog.waitFor({ state: 'visible', timeout: 30000 });
  for (const f of ['notes-a.txt', 'notes-b.txt']) {
    if (!(await dialog.innerText()).includes(`restore ${f}`)) throw new Error(`the confirmation does not list ${f}: ${await dialog.innerText()}`);
  }
  await screenshot('revert-confirmation');
  await dialog.locator('.monaco-button', { hasText: /^Revert$/ }).click();
  await waitFor(() => fs.readFileSync(path.join(WS, 'notes-a.txt'), 'utf8') === 'draft one\n' &&
    fs.readFileSync(path.join(WS, 'notes-b.txt'), 'utf8') === 'draft two\n', 'the files to be back');
  await toast('Reverted 2 files').waitFor({ state: 'visible', timeout: 15000 });
  await view('Tool Calls').locator('.monaco-list-row', { hasText: 'Revert call' }).first().waitFor({ timeout: 30000 });
  await screenshot('reverted');
  log('Show Changes listed both files in the diff editor; Revert put them back and left a revert call');
});

/**
 * An agent: the MCP TypeScript client running `toolsd mcp` on the workspace (as VS Code's agent or
 * any MCP host would), attached to the same daemon as this window. Driven line by line
 * (testdata/mcpclient/client.mjs).
 */
function startAgent(name) {
  const { spawn } = require('node:child_process');
  const child = spawn(process.execPath, [process.env.AGENT_CLIENT, 'mcp', '--workspace', WS, '--store', process.env.TOOLSD_STORE], {
    env: { ...process.env, CLIENT_NAME: name }, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiters = [];
  const lines = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    for (let i; (i = buf.indexOf('\n')) >= 0;) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      lines.push(m);
      for (const w of [...waiters]) if (w.pred(m)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
    }
  });
  const next = (pred, ms = 60000) => {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      waiters.push(w);
      setTimeout(() => reject(new Error('the agent did not answer in time')), ms);
    });
  };
  let id = 0;
  return {
    ready: next((m) => 'ready' in m),
    call(tool, args) {
      const n = ++id;
      child.stdin.write(JSON.stringify({ id: n, op: 'call', tool, args }) + '\n');
      return next((m) => m.id === n, 120000).then((m) => { if (m.error) throw new Error(m.error); return m.result; });
    },
    close() { child.stdin.end(); return new Promise((r) => child.once('exit', r)); },
  };
}

const resultText = (r) => (r.content || []).map((c) => c.text || '').join('');

scenario('an agent attached through toolsd mcp asks here, with its diff, and runs live in the Running view', async () => {
  const agent = startAgent('e2e-agent');
  const ready = await agent.ready;
  if (!ready.ready) throw new Error('the agent did not connect: ' + ready.error);
  await page.locator('.statusbar-item', { hasText: /1 agent attached/ }).first().waitFor({ timeout: 30000 });
  await screenshot('agent-attached');

  // An edit by the agent: the ask names it, its diff opens here, the answer here completes the call.
  fs.writeFileSync(path.join(WS, 'agent.txt'), 'written by hand\n');
  const edit = agent.call('edit', { filePath: 'agent.txt', oldString: 'by hand', newString: 'by the agent' });
  const editAsk = 'e2e-agent (edit) wants to change agent.txt';
  await clickToastButton(editAsk, 'Show diff');
  await page.locator('.monaco-diff-editor .editor.modified .view-lines', { hasText: 'written by the agent' }).first().waitFor({ timeout: 30000 });
  await openToolsdViews();
  const running = view('Running');
  await running.locator('.monaco-list-row', { hasText: 'e2e-agent' }).first().waitFor({ timeout: 30000 });
  await screenshot('agent-edit-diff');
  await clickToastButton(editAsk, 'Allow once');
  const r1 = await edit;
  if (r1.isError) throw new Error('the agent\'s edit: ' + resultText(r1));
  const body = fs.readFileSync(path.join(WS, 'agent.txt'), 'utf8');
  if (body !== 'written by the agent\n') throw new Error('agent.txt: ' + JSON.stringify(body));

  // A shell command of the agent: its output tail shows live in the Running view, named by the agent.
  const run = agent.call('bash', {
    command: 'echo agent-tick-1; echo agent-tick-2; while [ ! -e agent.flag ]; do sleep 0.1; done; echo agent-done',
    description: 'agent waits for agent.flag',
  });
  const tick = running.locator('.monaco-list-row', { hasText: 'agent-tick-2' }).first();
  const ask = toast('e2e-agent (bash) wants to run `echo agent-tick-1');
  for (let i = 0; ; i++) {
    if (i === 6) throw new Error('still asking after 5 answers');
    const which = await Promise.race([
      tick.waitFor({ timeout: 5000 }).then(() => 'running'),
      ask.waitFor({ state: 'visible', timeout: 5000 }).then(() => 'ask'),
    ]).catch(() => 'hidden');
    if (which === 'running') break;
    if (which === 'ask') await clickToastButton('e2e-agent (bash) wants to run `echo agent-tick-1', 'Allow once');
  }
  await running.locator('.monaco-list-row', { hasText: 'agent waits for agent.flag' }).first().waitFor({ timeout: 30000 });
  await running.locator('.monaco-list-row', { hasText: 'e2e-agent' }).first().waitFor({ timeout: 30000 });
  await screenshot('agent-running');
  fs.writeFileSync(path.join(WS, 'agent.flag'), '');
  const r2 = await run;
  if (r2.isError || !/agent-done/.test(resultText(r2))) throw new Error('the agent\'s bash: ' + resultText(r2).slice(0, 300));
  await tick.waitFor({ state: 'detached', timeout: 15000 });
  await agent.close();
  await page.locator('.statusbar-item', { hasText: /1 agent attached/ }).first().waitFor({ state: 'detached', timeout: 30000 });
  log('the agent\'s asks were answered here with the diff shown; its bash ran live in the Running view');
});

scenario('changing a toolsd setting restarts the daemon, which applies it', async () => {
  const starts = () => outputChannelLines().filter((l) => /running \(pid \d+\)/.test(l)).length;
  const before = starts();
  if (before < 1) throw new Error('no daemon start in the toolsd output channel');
  for (const dir of ['User', 'Machine']) {
    const f = path.join(USER_DATA, dir, 'settings.json');
    const cfg = JSON.parse(fs.readFileSync(f, 'utf8'));
    cfg['toolsd.permission'] = { bash: { 'printf *': 'allow' } };
    fs.writeFileSync(f, JSON.stringify(cfg, null, 2));
  }
  await waitFor(() => starts() > before, 'the daemon to start again after the settings change');
  const call = execute('bash', { command: 'printf allowed-by-settings', description: 'printf by settings' });
  await call.press();
  const r = await call.result(30000);
  if (r.status !== 'completed' || !/allowed-by-settings/.test(r.output)) throw new Error('result: ' + JSON.stringify(r));
  if (await toast('printf allowed-by-settings').isVisible()) throw new Error('the call asked despite the setting');
  await screenshot('settings-restart');
  log(`the daemon restarted on the settings change (${before} → ${starts()} starts); printf ran without an ask`);
});

scenario('a window reloaded on a workspace with .toolsd/ wakes toolsd by itself and serves again', async () => {
  if (!fs.existsSync(path.join(WS, '.toolsd'))) throw new Error('the workspace has no .toolsd/ by now');
  const before = toolsdActivations().length;
  const starts = () => outputChannelLines().filter((l) => /running \(pid \d+\)/.test(l)).length;
  const started = starts();
  // No toolsd view is open when the window comes back: only the workspace's .toolsd/ can wake it.
  await runCommand('View: Show Explorer');
  await page.locator('.explorer-folders-view').first().waitFor({ timeout: 15000 });
  await runCommand('Developer: Reload Window');
  await waitFor(() => toolsdActivations().length > before, 'toolsd to be activated in the reloaded window', 90000);
  const how = toolsdActivations()[before];
  if (!how.includes("activationEvent: 'workspaceContains:.toolsd'")) throw new Error(`toolsd was activated by something else: ${how}`);
  await waitFor(() => starts() > started, 'the reloaded window to start or join the daemon', 60000);
  await page.locator('.statusbar-item', { hasText: /toolsd: \d+ tools/ }).waitFor({ timeout: 60000 });
  const call = execute('read', { filePath: 'hello.txt' });
  await call.press();
  const r = await call.result(30000);
  if (r.status !== 'completed' || !/hello toolsd/.test(r.output)) throw new Error('result: ' + JSON.stringify(r).slice(0, 300));
  await screenshot('reloaded');
  log(how.replace(/^.*_doActivateExtension /, 'activated: ') + '; read works');
});

(async () => {
  const ctx = await chromium.launchPersistentContext(path.join(REQ, 'chromium-profile'), {
    executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  let passed = 0;
  let failed = 0;
  try {
    page = ctx.pages()[0] || await ctx.newPage();
    page.on('pageerror', (e) => log('pageerror:', String(e).slice(0, 200)));
    // The workbench's console errors and warnings, kept with the artifacts for a failure's post-mortem.
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') fs.appendFileSync(path.join(ART, 'console.log'), `[${m.type()}] ${m.text()}\n`);
    });
    await page.goto(URL_ + '?folder=' + encodeURIComponent(WS), { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await page.locator('.explorer-folders-view').first().waitFor({ timeout: 60000 });
    log('workbench up');
    const only = process.env.E2E_ONLY;
    for (const s of scenarios) {
      if (only && !s.name.includes(only)) continue;
      const t = Date.now();
      try {
        await s.fn();
        passed++;
        console.log(`ok - ${s.name} (${((Date.now() - t) / 1000).toFixed(1)}s)`);
      } catch (e) {
        failed++;
        console.log(`not ok - ${s.name}\n    ${String((e && e.stack) || e).split('\n').slice(0, 14).join('\n    ')}`);
        await screenshot('FAILED-' + s.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)).catch(() => {});
        await page.keyboard.press('Escape').catch(() => {});
      }
    }
  } catch (e) {
    failed++;
    console.log('not ok - the workbench did not come up: ' + ((e && e.stack) || e));
    await page?.screenshot({ path: path.join(ART, 'FAILED-workbench.png') }).catch(() => {});
  } finally {
    await ctx.close();
  }
  console.log(`e2e: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
})();
