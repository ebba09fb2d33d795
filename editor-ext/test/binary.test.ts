// findBinary: toolsd.path overrides, else the binary bundled in the extension's bin/, else PATH.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findBinary } from '../src/binary';

/** An extension folder, with bin/<name> when name is given. */
function extension(name?: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolsd-ext-bin-'));
  if (name) {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', name), '', { mode: 0o755 });
  }
  return dir;
}

test('the bundled binary is found when the extension carries one', (t) => {
  const dir = extension('toolsd');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  assert.equal(findBinary({ extensionPath: dir, platform: 'linux' }), path.join(dir, 'bin', 'toolsd'));
  assert.equal(findBinary({ extensionPath: dir, platform: 'darwin', configured: '' }), path.join(dir, 'bin', 'toolsd'));
});

test('without a bundled binary, toolsd is looked up on PATH', (t) => {
  const dir = extension();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  assert.equal(findBinary({ extensionPath: dir, platform: 'linux' }), 'toolsd');
  // A Windows binary in a Linux host's extension folder is not its binary.
  const win = extension('toolsd.exe');
  t.after(() => fs.rmSync(win, { recursive: true, force: true }));
  assert.equal(findBinary({ extensionPath: win, platform: 'linux' }), 'toolsd');
});

test('toolsd.path overrides the bundled binary', (t) => {
  const dir = extension('toolsd');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  assert.equal(findBinary({ extensionPath: dir, platform: 'linux', configured: '/opt/toolsd/bin/toolsd' }), '/opt/toolsd/bin/toolsd');
  assert.equal(findBinary({ extensionPath: dir, platform: 'linux', configured: '/opt/toolsd/bin/toolsd', exists: () => false }), '/opt/toolsd/bin/toolsd');
});

test('on Windows the bundled binary is bin\\toolsd.exe', () => {
  const ext = 'C:\\Users\\me\\.vscode\\extensions\\toolsd.toolsd-0.1.0-win32-x64';
  const seen: string[] = [];
  const exists = (p: string) => { seen.push(p); return p === `${ext}\\bin\\toolsd.exe`; };
  assert.equal(findBinary({ extensionPath: ext, platform: 'win32', exists }), `${ext}\\bin\\toolsd.exe`);
  assert.deepEqual(seen, [`${ext}\\bin\\toolsd.exe`]);
  assert.equal(findBinary({ extensionPath: ext, platform: 'win32', exists: () => false }), 'toolsd');
  assert.equal(findBinary({ extensionPath: ext, platform: 'win32', exists, configured: 'D:\\tools\\toolsd.exe' }), 'D:\\tools\\toolsd.exe');
});
