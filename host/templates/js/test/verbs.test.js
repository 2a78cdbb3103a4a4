// Unit tests of the verbs' logic under plain Node: no component is built.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Failure, newState, verbs } from '../src/verbs.js';

test('greet greets by name', () => {
  assert.deepEqual(verbs.greet.run({ name: 'Ada' }, newState()), { greeting: 'Hello, Ada!' });
});

test('greet refuses a blank name, naming the field', () => {
  assert.throws(
    () => verbs.greet.run({ name: '  ' }, newState()),
    (e) => e instanceof Failure && e.code === 'invalid-input' && e.message.includes('name') && !e.inputFired,
  );
});

test('count counts per state', () => {
  const state = newState();
  assert.deepEqual(verbs.count.run({}, state), { count: 1 });
  assert.deepEqual(verbs.count.run({}, state), { count: 2 });
  assert.deepEqual(verbs.count.run({}, newState()), { count: 1 });
});
