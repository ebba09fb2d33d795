// contributes.configuration must mirror the daemon's settings struct, whose JSON Schema is
// config/settings.schema.json in the repo: every daemon setting is a `toolsd.<name>` property of
// the same type (and enum, and nested property names), and no other `toolsd.*` property exists
// besides the extension's own (src/settingsKeys.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EXTENSION_ONLY } from '../src/settingsKeys';
import { extRoot } from './helpers';

const schemaPath = path.resolve(extRoot, '..', 'config', 'settings.schema.json');
const pkg = JSON.parse(fs.readFileSync(path.join(extRoot, 'package.json'), 'utf8'));
const contributed: Record<string, any> = pkg.contributes.configuration.properties;
const schema = fs.existsSync(schemaPath) ? JSON.parse(fs.readFileSync(schemaPath, 'utf8')) : undefined;
const skip = schema ? false : `${schemaPath} does not exist yet (the daemon's settings schema); nothing to compare with`;

function types(s: any): string[] {
  if (!s) return [];
  if (s.type) return ([] as string[]).concat(s.type).sort();
  if (s.$ref && schema?.$defs) return types(schema.$defs[String(s.$ref).replace('#/$defs/', '')]);
  return [];
}

function resolve(s: any): any {
  if (s?.$ref && schema?.$defs) return resolve(schema.$defs[String(s.$ref).replace('#/$defs/', '')]);
  return s;
}

test('every daemon setting has a matching toolsd.* contribution', { skip }, () => {
  const props: Record<string, any> = schema.properties ?? {};
  assert.ok(Object.keys(props).length > 0, 'the schema lists settings');
  for (const [name, raw] of Object.entries(props)) {
    const want = resolve(raw);
    const got = contributed[`toolsd.${name}`];
    assert.ok(got, `package.json contributes no toolsd.${name} (the daemon has the setting "${name}")`);
    assert.deepEqual(types(got), types(want), `toolsd.${name}: type`);
    if (want.enum) assert.deepEqual(got.enum, want.enum, `toolsd.${name}: enum`);
    if (want.properties) {
      assert.deepEqual(Object.keys(got.properties ?? {}).sort(), Object.keys(want.properties).sort(), `toolsd.${name}: nested settings`);
    }
    assert.ok(got.description || got.markdownDescription, `toolsd.${name} has a description`);
  }
});

test('no toolsd.* contribution is unknown to the daemon, besides the extension\'s own', { skip }, () => {
  const props: Record<string, any> = schema.properties ?? {};
  for (const full of Object.keys(contributed)) {
    const name = full.replace(/^toolsd\./, '');
    if (EXTENSION_ONLY.has(name)) continue;
    assert.ok(props[name], `package.json contributes ${full}, which the daemon's settings schema does not have`);
  }
});

test('extension-only settings are all contributed', () => {
  for (const name of EXTENSION_ONLY) assert.ok(contributed[`toolsd.${name}`], `toolsd.${name} is contributed`);
});
