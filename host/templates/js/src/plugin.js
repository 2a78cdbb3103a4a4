// The component's entry point: adapts src/verbs.js to the `tool` interface of
// stephost:plugin@0.5.0. You should not need to change this file.
import { log } from 'stephost:plugin/log@0.5.0';
import { Failure, newState, plugin, verbs } from './verbs.js';

const state = newState();

const WELL_KNOWN = new Set([
  'invalid-input', 'not-found', 'world-moved', 'timeout', 'denied', 'unsupported', 'failed',
]);

// componentize-js returns a `result`'s error by throwing it, and a thrown
// value that is not a `failure` record traps the instance (losing the
// message). So every exception from a verb is turned into a failure here.
function guarded(run) {
  try {
    return run();
  } catch (e) {
    throw toFailure(e);
  }
}

function toFailure(e) {
  if (e instanceof Failure) {
    return record(e.code, e.message, e.inputFired, e.details);
  }
  // A bug or an unexpected error: keep its message for the report and its
  // stack for the step's logs.
  let message = String(e);
  if (e instanceof Error) {
    message = e.name === 'Error' ? e.message : `${e.name}: ${e.message}`;
    log('error', `${message}\n${e.stack ?? ''}`);
  }
  return record('failed', message, true, '');
}

function record(code, message, inputFired, details) {
  return {
    code: WELL_KNOWN.has(code) ? { tag: code } : { tag: 'other', val: code },
    message: String(message),
    inputFired: Boolean(inputFired),
    details: details ?? '',
    classification: undefined,
    recovery: [],
  };
}

export const tool = {
  describe() {
    return {
      ...plugin,
      verbs: Object.entries(verbs).map(([name, verb]) => ({
        name,
        description: verb.description,
        inputSchema: JSON.stringify(verb.input),
        outputSchema: verb.output ? JSON.stringify(verb.output) : '',
        actsOnWorld: Boolean(verb.actsOnWorld),
        checked: false,
      })),
    };
  },

  invoke(verb, input) {
    return guarded(() => {
      if (!Object.hasOwn(verbs, verb)) {
        throw new Failure('invalid-input', `no verb \`${verb}\` in ${plugin.name}`, { inputFired: false });
      }
      const value = verbs[verb].run(JSON.parse(input), state);
      // An empty value means null to the host.
      return { value: value === undefined ? '' : JSON.stringify(value), content: [] };
    });
  },

  // No verb is `checked`, so the host never asks; answering ok is enough.
  check(_verb, _input) {},
};
