// The platform-specific packages that scripts/package.sh makes: each vsix of $TOOLSD_VSIX_DIR
// must carry a toolsd binary of its own target, told by the binary's header (ELF e_machine,
// Mach-O cputype, PE Machine; signed for Apple silicon) read from the zip, and only what the
// extension needs at run time.
// A target whose vsix is missing fails with the go build output package.sh kept for it.
//
// Env: TOOLSD_VSIX_DIR (without it the tests skip), TOOLSD_VSIX_TARGETS (the targets expected,
// space-separated; default all five).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { extRoot } from './helpers';

const dir = process.env.TOOLSD_VSIX_DIR;
const skip = dir ? false : 'TOOLSD_VSIX_DIR is not set: run scripts/package.sh DIR first (scripts/test.sh does)';

/** What each target's binaries must be, and the GOOS/GOARCH they are built for. */
const targets: Record<string, { goos: string; goarch: string; format: string; arch: string; signed?: boolean }> = {
  'linux-x64': { goos: 'linux', goarch: 'amd64', format: 'ELF', arch: 'x86-64' },
  'linux-arm64': { goos: 'linux', goarch: 'arm64', format: 'ELF', arch: 'aarch64' },
  'darwin-arm64': { goos: 'darwin', goarch: 'arm64', format: 'Mach-O', arch: 'arm64', signed: true },
  'darwin-x64': { goos: 'darwin', goarch: 'amd64', format: 'Mach-O', arch: 'x86_64' },
  'win32-x64': { goos: 'windows', goarch: 'amd64', format: 'PE', arch: 'AMD64' },
};
const expected = (process.env.TOOLSD_VSIX_TARGETS ?? Object.keys(targets).join(' ')).split(/\s+/).filter(Boolean);

/** An executable's format and architecture, from its first bytes. */
export function executableKind(b: Buffer): { format: string; arch: string } {
  if (b.length >= 20 && b.readUInt32BE(0) === 0x7f454c46) {
    const machine = b[5] === 2 ? b.readUInt16BE(18) : b.readUInt16LE(18);
    return { format: 'ELF', arch: ({ 0x3e: 'x86-64', 0xb7: 'aarch64', 0x03: 'i386', 0x28: 'arm' } as Record<number, string>)[machine] ?? `e_machine 0x${machine.toString(16)}` };
  }
  if (b.length >= 8 && (b.readUInt32LE(0) === 0xfeedfacf || b.readUInt32LE(0) === 0xfeedface)) {
    const cpu = b.readUInt32LE(4);
    return { format: 'Mach-O', arch: ({ 0x01000007: 'x86_64', 0x0100000c: 'arm64', 7: 'i386', 12: 'arm' } as Record<number, string>)[cpu] ?? `cputype 0x${cpu.toString(16)}` };
  }
  if (b.length >= 0x40 && b.toString('latin1', 0, 2) === 'MZ') {
    const pe = b.readUInt32LE(0x3c);
    if (b.length >= pe + 6 && b.toString('latin1', pe, pe + 4) === 'PE\0\0') {
      const machine = b.readUInt16LE(pe + 4);
      return { format: 'PE', arch: ({ 0x8664: 'AMD64', 0xaa64: 'ARM64', 0x14c: 'I386' } as Record<number, string>)[machine] ?? `Machine 0x${machine.toString(16)}` };
    }
  }
  return { format: `unknown (${b.subarray(0, 4).toString('hex')})`, arch: '?' };
}

/**
 * Whether a 64-bit Mach-O carries a code signature (the load command LC_CODE_SIGNATURE): macOS
 * on Apple silicon kills an arm64 program without one. Go's linker signs darwin/arm64 ad hoc.
 */
export function machOSigned(b: Buffer): boolean {
  if (b.length < 32 || b.readUInt32LE(0) !== 0xfeedfacf) return false;
  let at = 32;
  for (let n = b.readUInt32LE(16); n > 0 && at + 8 <= b.length; n--) {
    if (b.readUInt32LE(at) === 0x1d) return true;
    const size = b.readUInt32LE(at + 4);
    if (size < 8) return false;
    at += size;
  }
  return false;
}

interface ZipEntry { name: string; mode: number; data: () => Buffer }

/** The entries of a zip file (a vsix), from its central directory. */
function readZip(file: string): ZipEntry[] {
  const z = fs.readFileSync(file);
  let eocd = -1;
  for (let i = z.length - 22; i >= Math.max(0, z.length - 22 - 0xffff); i--) {
    if (z.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  }
  assert.ok(eocd >= 0, `${file} is not a zip file`);
  const entries: ZipEntry[] = [];
  let at = z.readUInt32LE(eocd + 16);
  for (let n = z.readUInt16LE(eocd + 10); n > 0; n--) {
    assert.equal(z.readUInt32LE(at), 0x02014b50, `${file}: bad central directory entry`);
    const method = z.readUInt16LE(at + 10);
    const size = z.readUInt32LE(at + 20);
    const nameLen = z.readUInt16LE(at + 28);
    const name = z.toString('utf8', at + 46, at + 46 + nameLen);
    const mode = z.readUInt32LE(at + 38) >>> 16;
    const local = z.readUInt32LE(at + 42);
    entries.push({
      name, mode,
      data: () => {
        const start = local + 30 + z.readUInt16LE(local + 26) + z.readUInt16LE(local + 28);
        const raw = z.subarray(start, start + size);
        return method === 0 ? raw : zlib.inflateRawSync(raw);
      },
    });
    at += 46 + nameLen + z.readUInt16LE(at + 30) + z.readUInt16LE(at + 32);
  }
  return entries;
}

/** Whether cmd/toolsd-guard builds for the target (its build constraints), as package.sh asks. */
function guardBuilds(goos: string, goarch: string): boolean {
  const out = cp.execFileSync('go', ['list', '-e', '-f', '{{len .GoFiles}}', './cmd/toolsd-guard'], {
    cwd: path.resolve(extRoot, '..'), env: { ...process.env, GOOS: goos, GOARCH: goarch }, encoding: 'utf8',
  });
  return out.trim() !== '0';
}

/** What a vsix may hold besides bin/: the manifest, the bundle and what the Marketplace shows. */
const runtimeFiles = [
  '[Content_Types].xml', 'extension.vsixmanifest', 'extension/package.json', 'extension/readme.md',
  'extension/LICENSE.txt', 'extension/dist/extension.js', 'extension/media/toolsd.svg',
];

test('the executable headers are told apart', () => {
  const elf = Buffer.alloc(64); elf.writeUInt32BE(0x7f454c46, 0); elf[4] = 2; elf[5] = 1; elf.writeUInt16LE(0xb7, 18);
  assert.deepEqual(executableKind(elf), { format: 'ELF', arch: 'aarch64' });
  const macho = Buffer.alloc(64); macho.writeUInt32LE(0xfeedfacf, 0); macho.writeUInt32LE(0x01000007, 4);
  assert.deepEqual(executableKind(macho), { format: 'Mach-O', arch: 'x86_64' });
  // Two load commands: LC_SEGMENT_64 (0x19), then LC_CODE_SIGNATURE (0x1d) or LC_UUID (0x1b).
  macho.writeUInt32LE(2, 16); macho.writeUInt32LE(0x19, 32); macho.writeUInt32LE(16, 36); macho.writeUInt32LE(0x1d, 48); macho.writeUInt32LE(16, 52);
  assert.equal(machOSigned(macho), true);
  macho.writeUInt32LE(0x1b, 48);
  assert.equal(machOSigned(macho), false);
  const pe = Buffer.alloc(256); pe.write('MZ', 0, 'latin1'); pe.writeUInt32LE(0x80, 0x3c); pe.write('PE\0\0', 0x80, 'latin1'); pe.writeUInt16LE(0x8664, 0x84);
  assert.deepEqual(executableKind(pe), { format: 'PE', arch: 'AMD64' });
  assert.match(executableKind(Buffer.from('#!/bin/sh\n')).format, /^unknown/);
});

for (const target of expected) {
  test(`toolsd-${target}.vsix carries toolsd built for ${target}`, { skip }, () => {
    const want = targets[target];
    assert.ok(want, `unknown target ${target} in TOOLSD_VSIX_TARGETS (known: ${Object.keys(targets).join(', ')})`);
    const vsix = path.join(dir!, `toolsd-${target}.vsix`);
    if (!fs.existsSync(vsix)) {
      const errFile = path.join(dir!, `toolsd-${target}.error`);
      const why = fs.existsSync(errFile)
        ? `its binaries did not build (GOOS=${want.goos} GOARCH=${want.goarch}):\n${fs.readFileSync(errFile, 'utf8').split('\n').slice(0, 12).join('\n')}`
        : 'scripts/package.sh made neither it nor an error file';
      assert.fail(`${target}: no ${path.basename(vsix)}: ${why}`);
    }
    const entries = readZip(vsix);
    const byName = new Map(entries.map((e) => [e.name, e]));
    const manifest = byName.get('extension.vsixmanifest')?.data().toString('utf8') ?? '';
    assert.match(manifest, new RegExp(`TargetPlatform="${target}"`), `${target}: the manifest names another target platform`);

    const exe = want.goos === 'windows' ? '.exe' : '';
    const bins = ['toolsd', ...(guardBuilds(want.goos, want.goarch) ? ['toolsd-guard'] : [])].map((b) => `extension/bin/${b}${exe}`);
    for (const name of bins) {
      const e = byName.get(name);
      assert.ok(e, `${target}: no ${name} in the vsix (it holds ${entries.map((x) => x.name).join(', ')})`);
      const data = e.data();
      assert.deepEqual(executableKind(data), { format: want.format, arch: want.arch }, `${target}: ${name}`);
      if (want.signed) assert.ok(machOSigned(data), `${target}: ${name} has no code signature, and Apple silicon runs no unsigned arm64 program`);
      if (!exe) assert.equal(e.mode & 0o111, 0o111, `${target}: ${name} is not executable in the zip (mode ${e.mode.toString(8)})`);
    }
    const extra = entries.map((e) => e.name).filter((n) => !runtimeFiles.includes(n) && !bins.includes(n));
    assert.deepEqual(extra, [], `${target}: the vsix holds files the extension does not run`);
  });
}
