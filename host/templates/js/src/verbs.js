// The plugin's verbs. This module never imports the component bindings, so
// `npm test` runs it under plain Node; src/plugin.js adapts it to the contract.

export const plugin = {
  name: '{{name}}',
  version: '0.1.0',
  description: 'Greets people by name and counts how often it was asked to count.',
  // False: over MCP the tools are named `<plugin>_<verb>`, so they cannot
  // clash with another plugin's `greet`.
  bareToolNames: false,
};

// A failure the caller should see as a failed step, with one of the
// contract's codes (`invalid-input`, `not-found`, ..., or a kebab-case code of
// your own). Any other exception is reported as `failed`.
export class Failure extends Error {
  constructor(code, message, { inputFired = true, details = '' } = {}) {
    super(message);
    this.name = 'Failure';
    this.code = code;
    // Say false only when you can prove nothing reached the outside world:
    // the host decides whether a retry is safe by it.
    this.inputFired = inputFired;
    this.details = typeof details === 'string' ? details : JSON.stringify(details);
  }
}

// What one instance remembers. The host keeps one instance per session, so
// this lives as long as the session does.
export function newState() {
  return { counted: 0 };
}

const SCHEMA = 'https://json-schema.org/draft/2020-12/schema';

// In the order they are listed. `input` is checked by the host before `run`
// is called, so `run` only sees inputs that match it.
export const verbs = {
  greet: {
    description: 'Greets someone by name. Returns {"greeting": "Hello, NAME!"}.',
    input: {
      $schema: SCHEMA,
      type: 'object',
      properties: { name: { type: 'string', minLength: 1, description: 'Who to greet.' } },
      required: ['name'],
      additionalProperties: false,
    },
    output: {
      $schema: SCHEMA,
      type: 'object',
      properties: { greeting: { type: 'string' } },
      required: ['greeting'],
    },
    actsOnWorld: false,
    run({ name }) {
      // A schema cannot say "not only spaces", so that is checked here.
      if (name.trim() === '') {
        throw new Failure('invalid-input', '`name` is blank: give the name of someone to greet', {
          inputFired: false,
          details: { field: 'name' },
        });
      }
      return { greeting: `Hello, ${name}!` };
    },
  },

  count: {
    description: 'Counts how many times it has run in this session, starting at 1. Returns {"count": N}.',
    input: { $schema: SCHEMA, type: 'object', properties: {}, additionalProperties: false },
    output: {
      $schema: SCHEMA,
      type: 'object',
      properties: { count: { type: 'integer', minimum: 1 } },
      required: ['count'],
    },
    actsOnWorld: false,
    run(_input, state) {
      state.counted += 1;
      return { count: state.counted };
    },
  },
};
