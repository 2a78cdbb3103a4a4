// The page library: the body of one WebDriver "execute script" call.
// arguments[0] is the operation, arguments[1] its arguments. Every call starts
// from `start`, the plugin's next ref number, so refs are unique across the
// documents and tabs of one browser: a ref read on one page never names an
// element of another.
//
// Refs live in a registry on the window, keyed to the document: a navigation
// or reload makes a new document, so every earlier ref stops resolving
// ("unknown" -> world-moved) instead of naming some other element.
const op = arguments[0];
const a = arguments[1] || {};

// Built-ins captured before page code can replace them.
//
// What holds:
// - DOM clobbering is defeated everywhere: a form's named controls shadow any
//   property of the form (`form.title`, `form.id`, even `form.getAttribute`),
//   and `<img name=body>` shadows `document.body`, so the library reads
//   elements and documents through the prototypes' own accessors and methods
//   (attr, tagOf, parentOf, qsa, ...), never through a property of the object.
//   Values are coerced with a captured String before string methods run.
// - Chromium runs this library in the page's own realm. For a document that
//   started after the plugin prepared its tab (every navigate), the hook kept
//   the browser's built-ins before any page script ran (`__stephostBuiltins`,
//   which no page script can replace); while this library runs synchronously
//   they are put back wherever the page replaced them (Array, String, RegExp
//   methods, JSON, Map/Set/WeakMap, Object and Reflect statics, DOM readers,
//   getComputedStyle) and the page's own are restored before the call returns
//   and while the events the library dispatches run (`asPage`), so the page's
//   handlers see the page's own.
// - Firefox (geckodriver) runs it in a sandbox whose JS built-ins (Array,
//   String, RegExp, JSON, Map, Reflect, ...) are its own, whatever the page
//   replaced, but which sees DOM objects as the page left them (no Xray
//   wrappers) and gets no early copy.
// What does not: on Firefox, and on Chromium without the early copy (a
// document the hook reached late), DOM methods and window.getComputedStyle are
// what the page left (clobbering is still defeated); code after an `await`
// (ready, point's wait for a still frame)
// runs with the page's built-ins; the DOM readers of same-origin frames' own
// realms are not put back (their elements are read with this realm's, which
// is); a page written against this tool that defines `__stephostBuiltins`
// before the hook runs is believed.
const pristine = window.wrappedJSObject ? null : window.__stephostBuiltins;
let held = 0;
const saved = [];
function hold() {
  if (!pristine || held++) return;
  const entries = pristine.entries, gopd = pristine.gopd, define = pristine.define;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i], holder = e[0], k = e[1], d = e[2];
    const cur = gopd(holder, k);
    if (cur && cur.value === d.value && cur.get === d.get && cur.set === d.set) continue;
    if (cur && !cur.configurable) continue;
    try { define(holder, k, d); saved[saved.length] = [holder, k, cur]; } catch (x) { /* frozen: left as is */ }
  }
}
function release() {
  if (!pristine || !held || --held) return;
  const define = pristine.define;
  for (let i = saved.length - 1; i >= 0; i--) {
    const s = saved[i];
    try { if (s[2]) define(s[0], s[1], s[2]); else delete s[0][s[1]]; } catch (x) { /* as above */ }
  }
  saved.length = 0;
}
// Runs `fn` (which dispatches events into the page) with the page's own built-ins.
function asPage(fn) {
  if (!held) return fn();
  const depth = held;
  held = 1;
  release();
  try { return fn(); } finally { hold(); held = depth; }
}
// The captured functions, filled by `capture` once the kept built-ins are in
// (helpers below are top-level, so accname.js, which comes first, can use them).
let gopd, apply, Str, arrayFrom, css, JSONify, getProto, EventCtor;
const DOM = {}, FIELD = {};
// A prototype's own accessor (its getter) or method, looked up the chain.
function own(C, k) {
  for (let p = C && C.prototype; p; p = getProto(p)) {
    const d = gopd(p, k);
    if (d) return d.get || d.value;
  }
  return null;
}
// A prototype's own setter, looked up the chain.
function setter(C, k) {
  for (let p = C && C.prototype; p; p = getProto(p)) {
    const d = gopd(p, k);
    if (d) return d.set || null;
  }
  return null;
}
function capture() {
  const W = window;
  gopd = Object.getOwnPropertyDescriptor; apply = Reflect.apply; Str = String; getProto = Object.getPrototypeOf;
  arrayFrom = Array.from; css = W.getComputedStyle; JSONify = JSON.stringify; EventCtor = W.Event;
  const found = {
    tagName: own(W.Element, 'tagName'), id: own(W.Element, 'id'), getAttribute: own(W.Element, 'getAttribute'),
    hasAttribute: own(W.Element, 'hasAttribute'), closest: own(W.Element, 'closest'), matches: own(W.Element, 'matches'),
    rect: own(W.Element, 'getBoundingClientRect'), rects: own(W.Element, 'getClientRects'), shadowRoot: own(W.Element, 'shadowRoot'),
    assignedSlot: own(W.Element, 'assignedSlot'), previous: own(W.Element, 'previousElementSibling'),
    scrollIntoView: own(W.Element, 'scrollIntoView'), clientLeft: own(W.Element, 'clientLeft'), clientTop: own(W.Element, 'clientTop'),
    elQsa: own(W.Element, 'querySelectorAll'), docQsa: own(W.Document, 'querySelectorAll'), fragQsa: own(W.DocumentFragment, 'querySelectorAll'),
    parentNode: own(W.Node, 'parentNode'), parentElement: own(W.Node, 'parentElement'), childNodes: own(W.Node, 'childNodes'),
    nodeType: own(W.Node, 'nodeType'), textContent: own(W.Node, 'textContent'), ownerDocument: own(W.Node, 'ownerDocument'),
    isConnected: own(W.Node, 'isConnected'), host: own(W.ShadowRoot, 'host'),
    title: own(W.HTMLElement, 'title'), innerText: own(W.HTMLElement, 'innerText'), editable: own(W.HTMLElement, 'isContentEditable'),
    body: own(W.Document, 'body'), root: own(W.Document, 'documentElement'), docTitle: own(W.Document, 'title'),
    readyState: own(W.Document, 'readyState'), view: own(W.Document, 'defaultView'), createElement: own(W.Document, 'createElement'),
    head: own(W.Document, 'head'), docActive: own(W.Document, 'activeElement'), shadowActive: own(W.ShadowRoot, 'activeElement'),
    docAt: own(W.Document, 'elementFromPoint'), shadowAt: own(W.ShadowRoot, 'elementFromPoint'),
    docAnimations: own(W.Document, 'getAnimations'),
    frameDoc: own(W.HTMLIFrameElement, 'contentDocument'), frameWin: own(W.HTMLIFrameElement, 'contentWindow'),
    oldFrameDoc: typeof W.HTMLFrameElement === 'function' ? own(W.HTMLFrameElement, 'contentDocument') : null,
    oldFrameWin: typeof W.HTMLFrameElement === 'function' ? own(W.HTMLFrameElement, 'contentWindow') : null,
    assignedNodes: own(W.HTMLSlotElement, 'assignedNodes'), control: own(W.HTMLLabelElement, 'control'),
    optionText: own(W.HTMLOptionElement, 'text'), optionValue: own(W.HTMLOptionElement, 'value'),
    setSelected: setter(W.HTMLOptionElement, 'selected'), setText: setter(W.Node, 'textContent'),
    focus: own(W.HTMLElement, 'focus'), click: own(W.HTMLElement, 'click'), dispatch: own(W.EventTarget, 'dispatchEvent'),
    rootNode: own(W.Node, 'getRootNode'), docById: own(W.Document, 'getElementById'),
    fragById: own(W.DocumentFragment, 'getElementById'),
  };
  for (const k in found) DOM[k] = found[k];
  // Per kind of form control: its prototype's readers (a control's own
  // properties can be replaced by the page, as React does with `value`).
  FIELD.INPUT = W.HTMLInputElement; FIELD.TEXTAREA = W.HTMLTextAreaElement; FIELD.SELECT = W.HTMLSelectElement;
  FIELD.BUTTON = W.HTMLButtonElement;
}
function get(f, self, args) {
  if (!f) return undefined;
  try { return apply(f, self, args || []); } catch (e) { return undefined; }
}
const attr = (el, n) => { const v = get(DOM.getAttribute, el, [n]); return typeof v === 'string' ? v : null; };
const hasAttr = (el, n) => get(DOM.hasAttribute, el, [n]) === true;
const tagOf = (el) => get(DOM.tagName, el) || '';
const idOf = (el) => get(DOM.id, el) || '';
const titleOf = (el) => { const t = get(DOM.title, el); return typeof t === 'string' ? t : (attr(el, 'title') || ''); };
const nodeTypeOf = (n) => get(DOM.nodeType, n) || 0;
const parentOf = (n) => get(DOM.parentNode, n) || null;
const parentElOf = (n) => get(DOM.parentElement, n) || null;
const childNodesOf = (n) => { const c = get(DOM.childNodes, n); return c ? arrayFrom(c) : []; };
const textContentOf = (n) => { const t = get(DOM.textContent, n); return typeof t === 'string' ? t : ''; };
const innerTextOf = (el) => { const t = get(DOM.innerText, el); return typeof t === 'string' ? t : textContentOf(el); };
const ownerOf = (n) => get(DOM.ownerDocument, n) || document;
const viewOf = (doc) => get(DOM.view, doc) || null;
const connected = (n) => get(DOM.isConnected, n) === true;
const shadowOf = (el) => get(DOM.shadowRoot, el) || null;
const hostOf = (root) => get(DOM.host, root) || null;
const editable = (el) => get(DOM.editable, el) === true;
const rectOf = (el) => get(DOM.rect, el) || { left: 0, top: 0, right: 0, bottom: 0, width: 0, height: 0, x: 0, y: 0 };
const rectsOf = (el) => { const r = get(DOM.rects, el); return r ? arrayFrom(r) : []; };
const closestOf = (el, sel) => get(DOM.closest, el, [sel]) || null;
const matchesOf = (el, sel) => get(DOM.matches, el, [sel]) === true;
const bodyOf = (doc) => get(DOM.body, doc) || null;
const rootOf = (doc) => get(DOM.root, doc) || null;
const styleOf = (el) => apply(css, window, [el]);
// querySelectorAll on a document, a shadow root (or fragment) or an element.
function qsa(root, sel) {
  const t = nodeTypeOf(root);
  const list = get(t === 9 ? DOM.docQsa : t === 11 ? DOM.fragQsa : DOM.elQsa, root, [sel]);
  return list ? arrayFrom(list) : [];
}
// A form control's property read through its own kind's prototype.
function field(el, k) {
  const C = FIELD[tagOf(el)];
  return C ? get(own(C, k), el) : undefined;
}
// ... and set through it: a control named `value` cannot shadow the setter, and
// a framework that wraps an element's own `value` (React's value tracker) sees
// the change as the browser's.
function setField(el, k, v) {
  const f = setter(FIELD[tagOf(el)], k);
  if (!f) throw new Error('no ' + k + ' on ' + tagOf(el));
  apply(f, el, [v]);
}
const scrollIntoViewOf = (el, how) => { get(DOM.scrollIntoView, el, [how]); };
hold();
try {
capture();
const KEY = '__stephostRefs';
let reg = window[KEY];
if (!reg || reg.doc !== document) {
  reg = { doc: document, byRef: new Map(), byEl: new WeakMap(), next: 1, navigating: 0 };
  Object.defineProperty(window, KEY, { value: reg, configurable: true, writable: true, enumerable: false });
  // Note when input starts a navigation away from this document (a form
  // submitted, a link followed), so the plugin waits for the new page instead
  // of reading this one in the moment before it goes.
  const mark = () => { reg.navigating = performance.now(); };
  if (window.navigation && window.navigation.addEventListener) {
    window.navigation.addEventListener('navigate', (e) => {
      // A download keeps this document: the plugin waits for its file instead.
      if (e.downloadRequest) { reg.downloading = performance.now(); return; }
      if (!e.hashChange && !(e.destination && e.destination.sameDocument)) mark();
    });
  }
  window.addEventListener('submit', (e) => { if (!e.defaultPrevented) mark(); });
  window.addEventListener('click', (e) => {
    const a = e.target ? closestOf(e.target, 'a[href]') : null;
    if (a && !e.defaultPrevented && hasAttr(a, 'download')) reg.downloading = performance.now();
    else if (a && !e.defaultPrevented && !Str(attr(a, 'href') || '').startsWith('#') && attr(a, 'target') !== '_blank') mark();
  });
  window.addEventListener('beforeunload', mark);
  // Requests the page starts from now on, so a wait for the network to go idle
  // can see the ones still running (resource timing lists only finished ones).
  // The counter lives in the page's own realm, installed by a script element:
  // Firefox runs this library in a sandbox whose changes to `window.fetch` the
  // page would never see. A page whose CSP forbids inline scripts keeps only
  // resource timing.
  // The same hook keeps the page's console messages, uncaught errors and
  // requests for read_console_messages and read_network_requests (logs.rs):
  // bounded rings here, handed over as JSON text. On Chromium the plugin also
  // registers the text between HOOK-START and HOOK-END to run at the start of
  // every new document of a tab (logs.rs), so it must stay plain text: no
  // backslash, backtick or dollar-brace in it.
  const hook = get(DOM.createElement, document, ['script']);
  try { hook.textContent = /* HOOK-START */`(() => {
    if (window.__stephostNet) return;
    // Built-ins as the browser made them, kept before the document's own
    // scripts run (only then: a late copy is whatever the page left) for the
    // page library to put back while it runs (see 'builtins' in page.js). The
    // property is neither writable nor configurable, so no later page script
    // can swap the copy. Left out: what this hook or app frameworks wrap on
    // purpose (timers, fetch, XHR, Promise, events, DOM mutation).
    if (!document.currentScript && !Object.prototype.hasOwnProperty.call(window, '__stephostBuiltins')) {
      try {
        const gopd = Object.getOwnPropertyDescriptor, kept = [];
        const hold = (holder, keys) => {
          if (!holder) return;
          for (const k of keys || Reflect.ownKeys(holder)) {
            const d = gopd(holder, k);
            if (d && d.configurable) kept.push(Object.freeze([holder, k, Object.freeze(d)]));
          }
        };
        for (const C of [Array, String, RegExp, Map, Set, WeakMap, WeakSet, Object, Number, Function]) {
          hold(C.prototype);
          hold(C, Reflect.ownKeys(C).filter((k) => k !== 'prototype' && k !== 'length' && k !== 'name'));
        }
        hold(JSON);
        hold(Reflect);
        hold(Math);
        hold(window, ['Array', 'String', 'RegExp', 'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'Object', 'Number',
          'JSON', 'Reflect', 'Math', 'Symbol', 'getComputedStyle', 'parseFloat', 'parseInt', 'isNaN']);
        if (window.WeakRef) hold(WeakRef.prototype);
        const reads = ['Node', 'Element', 'HTMLElement', 'Document', 'DocumentFragment', 'ShadowRoot', 'CharacterData',
          'HTMLIFrameElement', 'HTMLSlotElement', 'HTMLLabelElement', 'HTMLOptionElement',
          'CSSStyleDeclaration', 'DOMRect', 'DOMRectReadOnly'];
        const writes = /^(append|prepend|insert|remove|replace|set|toggle|before|after|attach|normalize|adopt|import|open|close|write|exec|on)/;
        for (const name of reads) {
          const C = window[name];
          if (C && C.prototype) hold(C.prototype, Reflect.ownKeys(C.prototype).filter((k) => typeof k !== 'string' || !writes.test(k)));
        }
        Object.defineProperty(window, '__stephostBuiltins', { value: Object.freeze({
          entries: Object.freeze(kept), gopd, define: Object.defineProperty, apply: Reflect.apply,
        }) });
      } catch (e) { /* the page library then uses what it finds */ }
    }
    // inflight: requests running; last: when one last ended; started: when
    // recent ones began; timers: short timeouts still pending, id -> [set, due].
    const net = { inflight: 0, last: performance.now(), started: [], timers: new Map() };
    Object.defineProperty(window, '__stephostNet', { value: net, configurable: true });
    const began = () => { net.inflight++; net.started.push(performance.now()); if (net.started.length > 64) net.started.shift(); };
    const ended = () => { net.inflight = Math.max(0, net.inflight - 1); net.last = performance.now(); };
    // What a caller can read across realms: plain numbers, no functions.
    net.recent = (since) => net.started.filter((t) => t >= since).length;
    // The last RING console messages and fetch/XHR requests, each text at most
    // TEXT characters. early: this ran before the document's own scripts (no
    // currentScript: the browser ran it, not a script element), so nothing
    // of the document was missed; since: when capture began (epoch ms).
    const RING = 500, TEXT = 2000;
    const clock = () => performance.timeOrigin + performance.now();
    const rec = { console: [], requests: [], dropped: { console: 0, requests: 0 }, since: clock(), early: !document.currentScript, cleared: 0 };
    const keep = (kind, item) => { const ring = rec[kind]; ring.push(item); if (ring.length > RING) { ring.shift(); rec.dropped[kind]++; } };
    const clip = (s, n = TEXT) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
    const shown = (v) => {
      try {
        if (typeof v === 'string') return v;
        if (v instanceof Error) {
          const head = v.name + ': ' + v.message, stack = String(v.stack || '');
          return stack.startsWith(head) ? stack : (stack ? head + ' ' + stack : head);
        }
        if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return String(v);
        if (typeof v === 'function') return 'function ' + (v.name || '(anonymous)');
        if (v.nodeType === 1) return '<' + v.tagName.toLowerCase() + (v.id ? '#' + v.id : '') + '>';
        let nodes = 0;
        const s = JSON.stringify(v, (k, x) => (++nodes > 200 ? undefined : typeof x === 'bigint' ? String(x) : x));
        return s === undefined ? String(v) : s;
      } catch (e) {
        try { return String(v); } catch (e2) { return '[object]'; }
      }
    };
    // console.log's arguments as DevTools shows them: %s %d %i %f %o %O %c
    // substituted, the rest joined by spaces.
    const text = (args) => {
      const parts = [];
      let i = 0, len = 0;
      if (typeof args[0] === 'string' && args.length > 1 && args[0].indexOf('%') >= 0) {
        i = 1;
        parts.push(args[0].replace(/%[sdifoOc%]/g, (m) => {
          if (m === '%%') return '%';
          if (i >= args.length) return m;
          const x = args[i++];
          if (m === '%c') return '';
          if (m === '%d' || m === '%i') return String(parseInt(x, 10));
          if (m === '%f') return String(parseFloat(x));
          return shown(x);
        }));
        len = parts[0].length;
      }
      for (; i < args.length && len < TEXT; i++) { const s = shown(args[i]); parts.push(s); len += s.length + 1; }
      return clip(parts.join(' '));
    };
    const note = (level, message, extra) => {
      const item = { level, text: clip(message), time: clock(), url: clip(location.href, 500) };
      if (extra) Object.assign(item, extra);
      keep('console', item);
    };
    const pageConsole = window.console;
    if (pageConsole) {
      for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
        const write = pageConsole[level];
        if (typeof write !== 'function') continue;
        pageConsole[level] = function (...args) {
          try { note(level, text(args)); } catch (e) { /* the page's logging never breaks */ }
          return write.apply(this, args);
        };
      }
      const assert = pageConsole.assert;
      if (typeof assert === 'function') {
        pageConsole.assert = function (ok, ...args) {
          try { if (!ok) note('error', 'Assertion failed' + (args.length ? ': ' + text(args) : '')); } catch (e) { /* as above */ }
          return assert.call(this, ok, ...args);
        };
      }
    }
    const stackOf = (err) => (err && typeof err.stack === 'string' && err.stack ? clip(err.stack, 1000) : null);
    window.addEventListener('error', (e) => {
      try {
        if (typeof ErrorEvent === 'function' && !(e instanceof ErrorEvent)) return;
        const m = String(e.message || 'Script error.');
        const extra = { kind: 'exception' };
        if (e.filename) extra.source = clip(e.filename + ':' + e.lineno + ':' + e.colno, 500);
        const stack = stackOf(e.error);
        if (stack) extra.stack = stack;
        note('error', m.startsWith('Uncaught') ? m : 'Uncaught ' + m, extra);
      } catch (x) { /* as above */ }
    });
    window.addEventListener('unhandledrejection', (e) => {
      try {
        const r = e.reason;
        const extra = { kind: 'rejection' };
        const stack = r instanceof Error ? stackOf(r) : null;
        if (stack) extra.stack = stack;
        note('error', 'Uncaught (in promise) ' + (r instanceof Error ? r.name + ': ' + r.message : shown(r)), extra);
      } catch (x) { /* as above */ }
    });
    // Requests: fetch and XHR with method, status or failure; resource timing
    // (read by the page library) adds the rest, so keep more of it than the
    // default 250 entries.
    const absolute = (u) => { try { return new URL(String(u), document.baseURI).href; } catch (e) { return String(u); } };
    const request = (method, url, type) => {
      const item = { method: String(method || 'GET').toUpperCase(), url: clip(String(url), 1000), type, start: performance.now() };
      keep('requests', item);
      return item;
    };
    const finish = (item, status, failed) => {
      if (!item) return;
      item.end = performance.now();
      if (status) item.status = status;
      if (failed) item.failed = clip(String(failed), 300);
    };
    try { performance.setResourceTimingBufferSize(1000); } catch (e) { /* keeps the default */ }
    // For the page library: the ring as JSON text (strings cross realms
    // whole), emptied when asked.
    net.take = (kind, clear) => {
      const out = JSON.stringify({ items: rec[kind], dropped: rec.dropped[kind], since: rec.since, early: rec.early, cleared: rec.cleared });
      if (clear) { rec[kind] = []; rec.dropped[kind] = 0; if (kind === 'requests') rec.cleared = performance.now(); }
      return out;
    };
    const pageFetch = window.fetch;
    if (typeof pageFetch === 'function') {
      window.fetch = function (...args) {
        began();
        let item = null;
        try {
          const input = args[0], init = args[1];
          const req = typeof Request === 'function' && input instanceof Request;
          item = request((init && init.method) || (req ? input.method : 'GET'), req ? input.url : absolute(input), 'fetch');
        } catch (e) { /* recording never breaks the request */ }
        let p;
        try { p = pageFetch.apply(this, args); } catch (e) { ended(); finish(item, 0, (e && e.message) || e); throw e; }
        Promise.resolve(p).then(
          (res) => { ended(); finish(item, res && res.status, res && res.type === 'error' ? 'network error' : null); },
          (e) => { ended(); finish(item, 0, (e && e.message) || e || 'failed'); },
        );
        return p;
      };
    }
    const opened = new WeakMap();
    const open = XMLHttpRequest.prototype.open;
    XMLHttpRequest.prototype.open = function (method, url, ...rest) {
      try { opened.set(this, [method, absolute(url)]); } catch (e) { /* as above */ }
      return open.call(this, method, url, ...rest);
    };
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
      began();
      const o = opened.get(this);
      const item = o ? request(o[0], o[1], 'xhr') : null;
      let how = null;
      this.addEventListener('error', () => { how = 'network error'; }, { once: true });
      this.addEventListener('abort', () => { how = 'aborted'; }, { once: true });
      this.addEventListener('timeout', () => { how = 'timed out'; }, { once: true });
      const xhr = this;
      this.addEventListener('loadend', () => { ended(); finish(item, xhr.status, xhr.status ? null : how || 'failed'); }, { once: true });
      try { return send.apply(this, args); } catch (e) { ended(); finish(item, 0, (e && e.message) || e); throw e; }
    };
    // Short timeouts (a debounced search, a menu that opens after a delay) are
    // work an input started; the plugin waits for those set just before it looks.
    // A longer one is a wait the app keeps for itself, which shows nothing when
    // it ends: a key chord's second key (JupyterLab's keymap waits a second
    // after every shortcut), a tooltip's delay, a retry.
    const LONG_TIMER_MS = 600;
    const setT = window.setTimeout, clearT = window.clearTimeout;
    let running = null;
    window.setTimeout = function (fn, ms, ...rest) {
      const delay = Number(ms) || 0;
      // A callback that sets itself again is a loop (polling, a clock), not
      // work an input started.
      if (typeof fn !== 'function' || delay < 10 || delay > LONG_TIMER_MS) return setT.call(this, fn, ms, ...rest);
      const loop = running === fn;
      let id;
      const run = function (...a) {
        net.timers.delete(id);
        const outer = running;
        running = fn;
        try { return fn.apply(this, a); } finally { running = outer; }
      };
      id = setT.call(this, run, ms, ...rest);
      const now = performance.now();
      if (!loop) net.timers.set(id, [now, now + delay]);
      if (net.timers.size > 256) net.timers.delete(net.timers.keys().next().value);
      return id;
    };
    window.clearTimeout = function (id) { net.timers.delete(id); return clearT.call(this, id); };
    // Frame callbacks an input asked for (a renderer that draws on the next
    // frame); one that asks again from its own callback is an animation loop.
    const raf = window.requestAnimationFrame, caf = window.cancelAnimationFrame;
    let drawing = null;
    net.frames = new Map();
    if (typeof raf === 'function') {
      window.requestAnimationFrame = function (fn) {
        if (typeof fn !== 'function') return raf.call(this, fn);
        const loop = drawing === fn;
        let id;
        const run = function (t) {
          net.frames.delete(id);
          const outer = drawing;
          drawing = fn;
          try { return fn.call(this, t); } finally { drawing = outer; }
        };
        id = raf.call(this, run);
        if (!loop) net.frames.set(id, performance.now());
        if (net.frames.size > 256) net.frames.delete(net.frames.keys().next().value);
        return id;
      };
      window.cancelAnimationFrame = function (id) { net.frames.delete(id); return caf.call(this, id); };
    }
    // How many of those asked since 'since' have not run yet.
    net.pendingFrames = (since) => { let k = 0; for (const at of net.frames.values()) if (at >= since) k++; return k; };
    // The latest due time of the short timeouts set since 'since' (0: none).
    net.due = (since) => { let d = 0; for (const [set, due] of net.timers.values()) if (set >= since && due > d) d = due; return d; };
    // DOM changes, watched from the document's start, so the settle wait after
    // input sees what the input's own handlers changed before it began looking.
    // mutated: the last change; run: when the current run of changes without a
    // 100 ms pause began. input: when input last reached the page; preRun: how
    // long the page had been changing without such a pause when that input
    // began (its first event after a moment without input). A settled page was
    // still for 100 ms (the settle wait's quiet window), so a long run up to
    // the input is the page's own (a ticker, a JS animation), not the input's.
    net.mutated = 0;
    net.run = 0;
    net.input = 0;
    net.preRun = 0;
    try {
      new MutationObserver(() => {
        const now = performance.now();
        if (now - net.mutated >= 100) net.run = now;
        net.mutated = now;
      }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    } catch (e) { /* the settle wait's own observer remains */ }
    const touched = () => {
      const now = performance.now();
      if (now - net.input > 50) net.preRun = now - net.mutated < 100 ? now - net.run : 0;
      net.input = now;
    };
    for (const type of ['pointerdown', 'mousedown', 'keydown', 'input', 'change', 'click']) {
      window.addEventListener(type, touched, true);
    }
    // Websocket apps (notebooks, data apps) answer input with messages, not
    // requests: sent is when the page last sent one, heard when one last arrived.
    // A message sent after an input and not yet answered is work in progress.
    net.sent = 0;
    net.heard = 0;
    const WS = window.WebSocket;
    if (typeof WS === 'function' && WS.prototype && typeof WS.prototype.send === 'function') {
      const wsSend = WS.prototype.send;
      const listening = new WeakSet();
      WS.prototype.send = function (...args) {
        try {
          if (!listening.has(this)) {
            listening.add(this);
            this.addEventListener('message', () => { net.heard = performance.now(); });
          }
          net.sent = performance.now();
        } catch (e) { /* recording never breaks the socket */ }
        return wsSend.apply(this, args);
      };
    }
  })();`/* HOOK-END */; } catch (e) { /* Trusted Types: see below */ }
  try {
    (get(DOM.head, document) || rootOf(document)).appendChild(hook);
    hook.remove();
  } catch (e) {
    // A page that allows no script text (Trusted Types, CSP) keeps resource timing only.
  }
}
// The page realm's request counter (see above), if the page let it in.
function net() {
  const raw = window.wrappedJSObject || window;
  const n = raw.__stephostNet;
  return n ? { inflight: Number(n.inflight) || 0, last: Number(n.last) || 0 } : { inflight: 0, last: 0 };
}
reg.next = Math.max(reg.next, a.start || 1);

const MAX_NAME = 150;
const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'textbox', 'searchbox', 'combobox',
  'listbox', 'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'slider', 'spinbutton', 'switch', 'tab',
  'treeitem']);
// Roles whose name is their content: their text is not repeated as children.
const NAME_FROM_CONTENT = new Set(['link', 'button', 'heading', 'option', 'menuitem', 'tab', 'summary', 'label']);
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);

function refOf(el) {
  let r = reg.byEl.get(el);
  if (!r) {
    r = 'ref_' + (reg.next++);
    reg.byEl.set(el, r);
    reg.byRef.set(r, new WeakRef(el));
  }
  return r;
}

function lookup(ref) {
  const w = reg.byRef.get(ref);
  if (!w) return { status: 'unknown' };
  const el = w.deref();
  if (!el || !connected(el)) return { status: 'detached' };
  return { status: 'ok', el };
}

// Only strings and numbers are text: a clobbered property (`form.title` naming
// an input) reads as nothing, not as "[object HTMLInputElement]".
function squash(s) {
  const t = typeof s === 'string' ? s : typeof s === 'number' ? Str(s) : '';
  return t.replace(/\s+/g, ' ').trim();
}

function cut(s, n) {
  s = squash(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// The element's role as the browser computes it (ACC, accname.js: ARIA's
// explicit role, else html-aam's implicit one), or null for what only groups or
// styles content (generic, none, text-level roles): read_page shows that as
// text, not as a line. Two words of this library's own stay: 'label' (its text
// names a control, so it is not repeated under it) and 'iframe' (entered).
const QUIET_ROLES = new Set(['generic', 'none', 'presentation', 'strong', 'emphasis', 'code', 'time', 'mark', 'deletion',
  'insertion', 'subscript', 'superscript', 'term', 'definition', 'rowgroup', 'caption', 'sectionheader', 'sectionfooter',
  'blockquote', 'document', 'graphics-document']);
function role(el) {
  const t = tagOf(el);
  if (t === 'IFRAME' || t === 'FRAME') return 'iframe';
  if (t === 'LABEL' && !attr(el, 'role')) return 'label';
  if (t === 'INPUT' && carried(el)) return 'slider';
  const r = ACC.role(el);
  if (r) return QUIET_ROLES.has(r) ? null : r;
  // Date and time fields have no ARIA role (Chromium's are internal: Date,
  // DateTime, InputTime); they take typed digits like a text box.
  if (t === 'INPUT' && DATE_TYPES.has(Str(attr(el, 'type') || '').toLowerCase())) return 'textbox';
  return null;
}
const DATE_TYPES = new Set(['date', 'time', 'datetime-local', 'month', 'week']);

// Whether any element of the top document hosts an open shadow root: only then
// is the flat tree (slots, shadow content) different from what innerText reads.
let shadowy = null;
function hasShadow() {
  if (shadowy === null) {
    shadowy = false;
    for (const el of qsa(document, '*')) if (shadowOf(el)) { shadowy = true; break; }
  }
  return shadowy;
}

// The content document of a same-origin frame; null for cross-origin ones.
function frameDoc(el) {
  const t = tagOf(el);
  if (t !== 'IFRAME' && t !== 'FRAME') return null;
  try {
    const d = get(t === 'IFRAME' ? DOM.frameDoc : DOM.oldFrameDoc, el);
    return d && rootOf(d) ? d : null;
  } catch (e) {
    return null;
  }
}

// An element's children as they render: a slot shows what is assigned to it
// (its fallback content otherwise), a shadow host shows its shadow tree.
function kids(el) {
  if (tagOf(el) === 'SLOT') {
    const assigned = arrayFrom(get(DOM.assignedNodes, el, [{ flatten: true }]) || []);
    return assigned.length ? assigned : childNodesOf(el);
  }
  const sr = shadowOf(el);
  return childNodesOf(sr || el);
}

// Text as it renders through slots and shadow trees, at most `max` characters.
// innerText stops at a slot, which is where a web component puts its label.
function flatText(el, max) {
  let out = '';
  const visit = (n) => {
    if (out.length >= max) return;
    const type = nodeTypeOf(n);
    if (type === 3) { out += Str(get(DOM.textContent, n) || ''); return; }
    if (type !== 1 || SKIP.has(tagOf(n))) return;
    const s = styleOf(n);
    if (s.display === 'none' || s.visibility === 'hidden') return;
    const block = !s.display.startsWith('inline') && s.display !== 'contents';
    if (block) out += ' ';
    for (const k of kids(n)) visit(k);
    if (block) out += ' ';
  };
  visit(el);
  return out;
}

function textOf(el) {
  if (hasShadow()) return squash(flatText(el, 2000));
  return squash(innerTextOf(el));
}

// The text of the elements an id-list attribute names (aria-labelledby,
// aria-describedby), looked up in the element's own tree (a shadow root has
// getElementById too).
function textOfIds(el, name) {
  const by = attr(el, name);
  if (!by) return '';
  const tree = get(DOM.rootNode, el) || ownerOf(el);
  const byId = nodeTypeOf(tree) === 9 ? DOM.docById : DOM.fragById;
  const out = [];
  for (const id of Str(by).split(/\s+/)) {
    const found = id ? get(byId, tree, [id]) : null;
    if (found) out.push(textOf(found));
  }
  return out.join(' ');
}

// The accessible name as the browser computes it (ACC, accname.js), cut to
// MAX_NAME. Only where that is empty, what a person sees the element as: a
// label's text (its own line), a rich-text editor's hint that the editor draws
// from an attribute, a custom combobox's shown text (a div showing its choice).
function accName(el, r) {
  const name = ACC.name(el);
  if (name) return name;
  if (r === 'label') return cut(textOf(el), MAX_NAME);
  if (r === 'textbox' && editable(el)) {
    const hint = attr(el, 'aria-placeholder') || attr(el, 'placeholder') || attr(el, 'data-placeholder');
    if (squash(hint)) return cut(hint, MAX_NAME);
  }
  if (r === 'combobox' && !FIELD[tagOf(el)]) return cut(textOf(el), MAX_NAME);
  return '';
}

function interactive(el, r) {
  const t = tagOf(el);
  if (t === 'A' && hasAttr(el, 'href')) return true;
  if (t === 'BUTTON' || t === 'SELECT' || t === 'TEXTAREA' || t === 'SUMMARY') return true;
  if (t === 'INPUT') return Str(attr(el, 'type') || '').toLowerCase() !== 'hidden';
  if (r && INTERACTIVE_ROLES.has(r)) return true;
  if (hasAttr(el, 'onclick')) return true;
  const tabindex = attr(el, 'tabindex');
  return tabindex !== null && Number(tabindex) >= 0;
}

const checkVisibility = own(Element, 'checkVisibility');
function visible(el) {
  if (checkVisibility) return get(checkVisibility, el, [{ visibilityProperty: true, checkVisibilityCSS: true }]) === true;
  const s = styleOf(el);
  return s.display !== 'none' && s.visibility !== 'hidden' && rectsOf(el).length > 0;
}

function isContents(el) {
  return styleOf(el).display === 'contents';
}

// An input's type as its attribute says, lower case ('text' when absent).
const typeOf = (el) => Str(attr(el, 'type') || 'text').toLowerCase();
// A field's text, read through its prototype: a text or number, else ''.
const fieldValue = (el) => { const v = field(el, 'value'); return typeof v === 'string' ? v : ''; };

function valueOf(el) {
  const t = tagOf(el);
  if (t === 'SELECT') {
    const picked = arrayFrom(field(el, 'selectedOptions') || []).map((o) => squash(get(DOM.optionText, o)));
    return picked.join(', ');
  }
  if (t === 'TEXTAREA') return fieldValue(el);
  if (t === 'INPUT') {
    const type = typeOf(el);
    if (type === 'checkbox' || type === 'radio' || type === 'submit' || type === 'button' || type === 'reset') return null;
    const v = fieldValue(el);
    if (type === 'password') return v ? '•'.repeat(Math.min(v.length, 12)) : '';
    return v;
  }
  if (editable(el)) return textOf(el);
  return null;
}

function describe(el, r) {
  const t = tagOf(el);
  const out = { ref: refOf(el), role: r || t.toLowerCase(), name: squash(accName(el, r)) };
  const v = valueOf(el);
  if (v !== null) out.value = cut(v, 300);
  if (t === 'INPUT') {
    const type = typeOf(el);
    if (type === 'checkbox' || type === 'radio') out.checked = field(el, 'checked') === true;
    if (type !== 'text') out.type = type;
  }
  if (t === 'A' && hasAttr(el, 'href')) out.href = attr(el, 'href');
  if (r === 'heading') out.level = Number(t.slice(1)) || Number(attr(el, 'aria-level')) || undefined;
  if (matchesOf(el, ':disabled')) out.disabled = true;
  if (field(el, 'required') === true) out.required = true;
  if (t === 'SELECT') {
    out.options = arrayFrom(field(el, 'options') || []).slice(0, 50).map((o) => squash(get(DOM.optionText, o)));
  }
  return out;
}

function line(d, depth) {
  let s = '  '.repeat(depth) + '- ' + d.role;
  if (d.name) s += ' ' + JSONify(d.name);
  s += ' [' + d.ref + ']';
  if (d.level) s += ' level=' + d.level;
  if (d.type) s += ' type=' + d.type;
  if (d.value !== undefined) s += ' value=' + JSONify(d.value);
  if (d.checked !== undefined) s += d.checked ? ' checked' : ' unchecked';
  if (d.href !== undefined) s += ' href=' + JSONify(d.href);
  if (d.disabled) s += ' disabled';
  if (d.required) s += ' required';
  if (d.options) s += ' options=' + JSONify(d.options);
  if (d.note) s += ' (' + d.note + ')';
  if (d.frame) s += ' frame=' + d.frame;
  return s;
}

// Every element under `root`, open shadow roots and same-origin frames included
// (closed shadow roots and other origins' frames are out of reach by design), in
// document order with each shadow tree or frame document after its host.
function allElements(root) {
  const out = [];
  const visit = (node) => {
    for (const el of qsa(node, '*')) {
      out.push(el);
      const sr = shadowOf(el);
      if (sr) visit(sr);
      const doc = frameDoc(el);
      if (doc) visit(doc);
    }
  };
  visit(root);
  return out;
}

// The frame element hosting `el`'s document, if it is a same-origin frame's.
function hostFrame(el) {
  const win = viewOf(ownerOf(el));
  if (!win || win === window) return null;
  try {
    // An own property of each window (no prototype holds it), which no
    // element id can shadow.
    return win.frameElement || null;
  } catch (e) {
    return null;
  }
}

// Where a frame element's content starts in the viewport of the document that
// holds it (inside its border and padding).
function contentOrigin(f) {
  const r = rectOf(f);
  const s = styleOf(f);
  return { x: r.left + (get(DOM.clientLeft, f) || 0) + (parseFloat(s.paddingLeft) || 0), y: r.top + (get(DOM.clientTop, f) || 0) + (parseFloat(s.paddingTop) || 0) };
}

// Where `el`'s frame viewport starts in the top viewport (0, 0 for the top document).
function frameOffset(el) {
  let x = 0, y = 0;
  for (let f = hostFrame(el); f; f = hostFrame(f)) {
    const o = contentOrigin(f);
    x += o.x;
    y += o.y;
  }
  return { x, y };
}

// `el` renders: it is visible, and so is every frame it sits in.
function shown(el) {
  if (!visible(el)) return false;
  for (let f = hostFrame(el); f; f = hostFrame(f)) if (!visible(f)) return false;
  return true;
}

// Cross-origin frames (frames.rs): this library cannot reach into them, so the
// plugin switches WebDriver into such a frame and runs the library there. A frame
// is named by its hops: the window.frames indexes that lead from this document to
// it through any same-origin frames in between, one "switch to frame" each.
function isFrame(el) {
  const t = tagOf(el);
  return t === 'IFRAME' || t === 'FRAME';
}
const frameWindow = (f) => get(tagOf(f) === 'IFRAME' ? DOM.frameWin : DOM.oldFrameWin, f) || null;

function hopsTo(f) {
  const hops = [];
  for (let el = f; el; el = hostFrame(el)) {
    const win = viewOf(ownerOf(el));
    if (!win) return null;
    const inner = frameWindow(el);
    let i = 0;
    while (i < win.length && win[i] !== inner) i++;
    if (i >= win.length) return null;
    hops.unshift(i);
  }
  return hops;
}

// The frame element `hops` lead to from this document, or null.
function frameByHops(hops) {
  let win = window, el = null;
  for (const i of hops) {
    const child = win[i];
    if (!child) return null;
    el = qsa(win.document, 'iframe, frame').find((f) => frameWindow(f) === child) || null;
    if (!el) return null;
    win = child;
  }
  return el;
}

// Where a frame's viewport starts in this document's viewport.
function frameOrigin(f) {
  const o = contentOrigin(f), off = frameOffset(f);
  return { x: o.x + off.x, y: o.y + off.y };
}

// The cross-origin frames the plugin can enter from here (visible ones, in
// document order, same-origin frames searched too): hops, the frame's ref and
// where its viewport starts, for find to search them.
function crossFrames() {
  const out = [];
  const visit = (doc) => {
    for (const f of qsa(doc, 'iframe, frame')) {
      if (out.length >= 50) return;
      const inner = frameDoc(f);
      if (inner) { visit(inner); continue; }
      const hops = shown(f) ? hopsTo(f) : null;
      if (hops) out.push(Object.assign({ hops, ref: refOf(f) }, frameOrigin(f)));
    }
  };
  visit(document);
  return out;
}

// Where the point (a.x, a.y) of the viewport of the frame `a.hops` leads to lands
// in this document's viewport, with the frame scrolled into view if the point
// was outside it, and whether a press there reaches the frame.
function framePoint() {
  const f = frameByHops(a.hops || []);
  if (!f || !connected(f)) return { status: 'detached' };
  if (!shown(f)) return { status: 'hidden' };
  const at = () => { const o = frameOrigin(f); return { x: o.x + a.x, y: o.y + a.y }; };
  const inView = (p) => p.x >= 0 && p.y >= 0 && p.x < window.innerWidth && p.y < window.innerHeight;
  let p = at();
  if (!inView(p)) {
    scrollIntoViewOf(f, { block: 'center', inline: 'center', behavior: 'instant' });
    p = at();
  }
  if (!inView(p)) return { status: 'offscreen' };
  const x = Math.floor(p.x), y = Math.floor(p.y);
  const hit = deepHit(x, y);
  if (hit !== f) return { status: 'covered', x, y, by: hit ? describe(hit, role(hit)) : null };
  return { status: 'ok', x, y };
}

// Scrolls the frame `a.hops` leads to into view if it is not fully in view.
function frameReveal() {
  const f = frameByHops(a.hops || []);
  if (!f || !connected(f)) return { status: 'detached' };
  const b = rectOf(f), off = frameOffset(f);
  if (b.left + off.x < 0 || b.top + off.y < 0 || b.right + off.x > window.innerWidth || b.bottom + off.y > window.innerHeight) {
    scrollIntoViewOf(f, { block: 'center', inline: 'center', behavior: 'instant' });
  }
  return { status: 'ok' };
}

// For input on Firefox, which delivers it only to the document WebDriver is
// switched to: the cross-origin frame under the point (a.x, a.y), or without a
// point the one that holds the focus; its hops and where its viewport starts.
function inputFrame() {
  let f = null;
  if (typeof a.x === 'number') {
    f = deepHit(a.x, a.y);
  } else {
    f = get(DOM.docActive, document);
    for (;;) {
      const sr = f && shadowOf(f), fd = f && frameDoc(f);
      if (sr && get(DOM.shadowActive, sr)) f = get(DOM.shadowActive, sr);
      else if (fd && get(DOM.docActive, fd)) f = get(DOM.docActive, fd);
      else break;
    }
  }
  if (!f || !isFrame(f) || frameDoc(f)) return { status: 'ok' };
  const hops = hopsTo(f);
  return hops ? Object.assign({ status: 'ok', hops }, frameOrigin(f)) : { status: 'ok' };
}

// What is really under (x, y) of the top viewport: elementFromPoint stops at a
// shadow host and at a frame, so ask each open shadow root and same-origin frame
// document in turn.
function deepHit(x, y) {
  let hit = get(DOM.docAt, document, [x, y]);
  let ox = 0, oy = 0;
  for (;;) {
    if (!hit) return null;
    const sr = shadowOf(hit);
    if (sr) {
      const inner = get(DOM.shadowAt, sr, [x - ox, y - oy]);
      if (!inner || inner === hit) return hit;
      hit = inner;
      continue;
    }
    const doc = frameDoc(hit);
    if (doc) {
      const o = contentOrigin(hit);
      ox += o.x;
      oy += o.y;
      const inner = get(DOM.docAt, doc, [x - ox, y - oy]);
      if (!inner) return hit;
      hit = inner;
      continue;
    }
    return hit;
  }
}

// The parent in the tree as it renders: a slotted node's slot, a shadow root's host.
function flatParent(n) {
  return (nodeTypeOf(n) === 1 && get(DOM.assignedSlot, n)) || parentOf(n) || (nodeTypeOf(n) === 11 && hostOf(n)) || null;
}

// `outer` contains `inner` in the tree as it renders (through slots and shadow roots).
function deepContains(outer, inner) {
  for (let n = inner; n; n = flatParent(n)) {
    if (n === outer) return true;
  }
  return false;
}

// A press at a point that hits `hit` reaches `el`: the element itself, what it
// renders (its shadow tree, its slotted content), its label, or the shadow host
// it lives in when the hit is that host's own slotted text.
function reaches(el, hit) {
  if (!hit) return false;
  if (hit === el || deepContains(el, hit)) return true;
  const labels = field(el, 'labels');
  if (labels && arrayFrom(labels).some((l) => l === hit || deepContains(l, hit))) return true;
  for (let n = hit; n; n = flatParent(n)) {
    if (tagOf(n) === 'LABEL' && get(DOM.control, n) === el) return true;
  }
  if (shadowOf(hit) && deepContains(hit, el)) return true;
  // A widget that draws over its own hidden input (a code editor's lines over
  // the clipped text field that takes its keys): the press lands on the widget,
  // which is what a person clicks too. Only for a text field clipped to nothing
  // by its close container, and a hit inside that container.
  if (clippedField(el)) {
    for (let n = flatParent(el), hops = 0; n && hops < 2; n = flatParent(n), hops++) {
      if (deepContains(n, hit)) return true;
    }
  }
  return false;
}

// A text field that its parent or grandparent clips to a sliver (overflow
// hidden, a pixel or less across): an input proxy of a widget.
function clippedField(el) {
  const t = tagOf(el);
  const text = t === 'TEXTAREA' || (t === 'INPUT' && role(el) === 'textbox') || editable(el);
  if (!text) return false;
  for (let n = parentElOf(el), hops = 0; n && hops < 2; n = parentElOf(n), hops++) {
    const b = rectOf(n);
    if ((b.width <= 1 || b.height <= 1) && styleOf(n).overflow !== 'visible') return true;
  }
  return false;
}

function childrenOf(el) {
  const doc = frameDoc(el);
  if (doc) return bodyOf(doc) ? [bodyOf(doc)] : [];
  return kids(el).filter((n) => nodeTypeOf(n) === 1);
}

// A label that wraps its control: the control is listed with the label's text as
// its name, so the label itself is not.
function wrapsControl(el) {
  if (tagOf(el) !== 'LABEL') return false;
  const c = get(DOM.control, el);
  return !!c && deepContains(el, c);
}

// Lines inside a frame end with ` frame=ref_N`, the ref of the iframe whose
// document holds the element (the innermost frame); lines without it are the
// top document's. With `filter: interactive` the iframe's own line is kept
// too, and its content indented under it, so the marker names a listed line.
function readPage() {
  const filter = a.filter === 'interactive' ? 'interactive' : 'all';
  const maxDepth = a.depth || 60;
  const maxLines = a.max_lines || 1500;
  const lines = [];
  let dropped = 0;
  let root = bodyOf(document) || rootOf(document);
  if (a.ref_id) {
    const found = lookup(a.ref_id);
    if (found.status !== 'ok') return { status: found.status };
    root = found.el;
  }
  const maxChars = a.max_chars || 40000;
  let chars = 0;
  const emit = (text) => {
    if (lines.length < maxLines && chars + text.length < maxChars) { lines.push(text); chars += text.length + 1; return true; }
    dropped++;
    return false;
  };
  // Cross-origin frames met on the way, for the plugin to read and splice in
  // (frames.rs): `at` is where their lines go, `line` the frame's own line.
  const outer = [];
  // Past the cap only a count is kept; stop walking once it is clearly large.
  const full = () => dropped > 5000;
  const only = filter === 'interactive';
  // depth: nesting in the tree (all) or in frames (interactive); frame: the
  // ref of the frame the element is in, null in the top document.
  const walk = (el, depth, frame) => {
    if (depth > maxDepth || SKIP.has(tagOf(el)) || full()) return;
    if (!visible(el) && !isContents(el)) return;
    const r = role(el);
    const isInteractive = interactive(el, r);
    const framed = isFrame(el);
    let emitted = false, ownLine = null;
    const wraps = wrapsControl(el);
    if (!wraps && (only ? isInteractive || framed : (r || isInteractive))) {
      const d = describe(el, r);
      const doc = frameDoc(el);
      if (framed && !doc && !hopsTo(el)) d.note = 'another origin: its content is not read';
      if (frame) d.frame = frame;
      if (emit(line(d, depth))) ownLine = lines.length - 1;
      emitted = true;
    }
    if (emitted && (NAME_FROM_CONTENT.has(r) || tagOf(el) === 'SELECT')) return;
    const next = emitted && (!only || framed) ? depth + 1 : depth;
    const doc = frameDoc(el);
    if (doc) {
      const body = bodyOf(doc) || rootOf(doc);
      if (body) walk(body, next, refOf(el));
      return;
    }
    if (framed) {
      const hops = dropped ? null : hopsTo(el);
      if (hops) outer.push({ hops, ref: refOf(el), at: lines.length, line: ownLine, depth: next });
      return;
    }
    if (!only) {
      const mark = frame ? ' frame=' + frame : '';
      for (const node of kids(el)) {
        const t = nodeTypeOf(node);
        if (t === 3) {
          if (wraps) continue;
          const text = squash(textContentOf(node));
          if (text) emit('  '.repeat(next) + '- text ' + JSONify(cut(text, 300)) + mark);
        } else if (t === 1) {
          walk(node, next, frame);
        }
      }
    } else {
      for (const child of childrenOf(el)) walk(child, next, frame);
    }
  };
  const host = hostFrame(root);
  walk(root, 0, host ? refOf(host) : null);
  let tree = lines.join('\n');
  if (dropped) {
    tree += '\n… ' + (dropped > 5000 ? 'more than 5000' : dropped) + ' more lines not shown; read a part with ref_id, or use find';
  }
  return {
    status: 'ok', url: location.href, title: Str(get(DOM.docTitle, document) || ''), tree,
    viewport: { width: window.innerWidth, height: window.innerHeight }, frames: outer, dropped,
  };
}

const ROLE_WORDS = {
  button: ['button'], btn: ['button'], link: ['link'], links: ['link'],
  box: ['textbox', 'searchbox', 'combobox', 'checkbox'], field: ['textbox', 'searchbox', 'combobox', 'spinbutton'],
  input: ['textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'spinbutton', 'slider'],
  textbox: ['textbox', 'searchbox'], textarea: ['textbox'], text: ['textbox', 'searchbox'],
  search: ['searchbox'], checkbox: ['checkbox'], check: ['checkbox'], radio: ['radio'],
  dropdown: ['combobox', 'listbox'], select: ['combobox', 'listbox'], menu: ['combobox', 'menu', 'listbox', 'menuitem'],
  heading: ['heading'], title: ['heading'], image: ['img'], img: ['img'], picture: ['img'], tab: ['tab'],
  option: ['option'], slider: ['slider'], list: ['list'], item: ['listitem', 'option', 'menuitem'], row: ['row'],
  cell: ['cell'], table: ['table'], form: ['form'], dialog: ['dialog'], editor: ['textbox'],
};
const STOP = new Set(['the', 'a', 'an', 'of', 'to', 'in', 'on', 'for', 'with', 'and', 'or', 'that', 'this', 'is',
  'element', 'elements', 'thing', 'area', 'at', 'by', 'labelled', 'labeled', 'named', 'called', 'which', 'where']);

function ownText(el) {
  let text = '';
  for (const node of childNodesOf(el)) if (nodeTypeOf(node) === 3) text += ' ' + textContentOf(node);
  return squash(text);
}

// What an unnamed control sits in: the text of its row or list item (a todo
// list's checkbox next to its label), so "Walk the dog checkbox" finds it.
function context(el) {
  for (let n = flatParent(el), hops = 0; n && nodeTypeOf(n) === 1 && hops < 4; n = flatParent(n), hops++) {
    const r = role(n), t = tagOf(n);
    if (r === 'listitem' || r === 'row' || r === 'option' || r === 'treeitem' || t === 'LI' || t === 'TR') {
      return cut(textOf(n), MAX_NAME);
    }
  }
  // Else what introduces its part of the page, the nearest first: a heading
  // just before it or its container (a form under "Custom SQL query" whose
  // editor box has no label; a launcher's "Notebook" tiles under a header
  // block holding the heading), or a named region or group around it (a code
  // cell's editor inside "Code Cell Content").
  for (let n = el, hops = 0; n && nodeTypeOf(n) === 1 && hops < 8; n = flatParent(n), hops++) {
    if (hops < 6) {
      const label = labelFor(n);
      if (label) return cut(label, MAX_NAME);
    }
    // A region or group, or any container its author labelled (JupyterLab's
    // cell is a plain div labelled "Code Cell Content").
    if (n !== el && (NAMED_PARTS.has(role(n)) || attr(n, 'aria-label') || attr(n, 'aria-labelledby'))) {
      const name = squash(accName(n, role(n)) || attr(n, 'aria-label'));
      if (name) return cut(name, MAX_NAME);
    }
    let sib = get(DOM.previous, n);
    for (let k = 0; sib && k < 3; sib = get(DOM.previous, sib), k++) {
      if (role(sib) === 'heading' || tagOf(sib) === 'LEGEND') return cut(textOf(sib), MAX_NAME);
      // A header block: the last heading inside it, if it is a small one.
      const inner = qsa(sib, 'h1,h2,h3,h4,h5,h6,[role="heading"],legend');
      if (inner.length && inner.length <= 3) return cut(textOf(inner[inner.length - 1]), MAX_NAME);
    }
  }
  return '';
}
// The text of a label whose `for` names `n` when `n` is not a form control
// (Dash's label for the div its slider draws in): the browser names nothing by
// it, but a person reads the control inside by it. A map per document, built
// once per call.
const FORM_TAGS = new Set(['INPUT', 'SELECT', 'TEXTAREA', 'BUTTON', 'METER', 'OUTPUT', 'PROGRESS']);
const forLabels = new WeakMap();
function labelFor(n) {
  const id = attr(n, 'id');
  if (!id || FORM_TAGS.has(tagOf(n))) return '';
  const doc = ownerOf(n);
  if (!forLabels.has(doc)) {
    const map = new Map();
    for (const l of qsa(doc, 'label[for]')) {
      const to = attr(l, 'for');
      if (to && !map.has(to)) map.set(to, l);
    }
    forLabels.set(doc, map);
  }
  const label = forLabels.get(doc).get(id);
  return label ? textOf(label) : '';
}
// Containers whose name says which part of the page a control is in.
const NAMED_PARTS = new Set(['region', 'group', 'form', 'dialog', 'alertdialog', 'tabpanel', 'toolbar', 'navigation',
  'search', 'complementary', 'radiogroup']);

// Role words that name the kind of thing a person acts on: an element of
// another kind never fully matches a description that uses one ("code cell
// editor" is not a button that mentions code). The other role words (item,
// option, row, ...) only add to the score: lists of plain divs are common.
const KIND_WORDS = new Set(['button', 'btn', 'link', 'links', 'checkbox', 'check', 'radio', 'textbox', 'textarea', 'text',
  'field', 'input', 'box', 'editor', 'slider', 'dropdown', 'select', 'search']);
// Words for a place to write text: a one-line input of another kind (a date,
// a colour) is not one, whatever role it reports.
const TEXT_WORDS = new Set(['textbox', 'textarea', 'text', 'editor']);
const NOT_TEXT = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range', 'file', 'checkbox', 'radio',
  'hidden', 'submit', 'button', 'reset', 'image']);
const words = (s) => Str(s).toLowerCase().split(/[^\p{L}\p{N}_-]+/u).filter((w) => w && !STOP.has(w));

// How many frames deep `el`'s document is (0: the top document).
function frameDepth(el) {
  let n = 0;
  for (let f = hostFrame(el); f; f = hostFrame(f)) n++;
  return n;
}

// Matches for a description, best first. `matches` hold only elements that
// match every word (content words in their name, text or attributes, and a
// kind word by their role); those that match some go to `partial_matches`,
// never first in `matches`. An element whose name (or text) is exactly the
// words asked for ranks above any that merely contains them. Among equals the
// top document's come first. `tied`: how many share the best score.
function find(asked = a.query, limit = a.limit || 20) {
  const query = squash(asked).toLowerCase();
  const tokens = words(query);
  if (!tokens.length) return { status: 'ok', matches: [], total: 0, partial_matches: [], partial_total: 0, tied: 0, scores: [], partial_scores: [] };
  // The words that say what the element shows or is called; the rest name its kind.
  const content = tokens.filter((t) => ROLE_WORDS[t] === undefined);
  const kinds = tokens.filter((t) => KIND_WORDS.has(t));
  const longText = tokens.includes('editor') || tokens.includes('textarea') || / text area/.test(' ' + query);
  const escape = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const wholeRe = new Map(tokens.map((t) => [t, new RegExp('(^|[^\\p{L}\\p{N}])' + escape(t) + '($|[^\\p{L}\\p{N}])', 'u')]));
  // A number or a short word matches only as a whole word: "1" is not in "10".
  const needsWhole = (t) => t.length < 3 || /^\p{N}+$/u.test(t);
  const scored = [], near = [];
  const all = allElements(bodyOf(document) || rootOf(document));
  for (let i = 0; i < all.length; i++) {
    const el = all[i];
    if (SKIP.has(tagOf(el)) || wrapsControl(el)) continue;
    const r = role(el);
    const isInteractive = interactive(el, r);
    const text = squash(isInteractive || NAME_FROM_CONTENT.has(r) ? textOf(el).slice(0, 300) : ownText(el));
    if (!isInteractive && !r && !text) continue;
    const name = squash(accName(el, r));
    let around = isInteractive && !name ? context(el) : '';
    // What the element is called, shows and says about itself; never its
    // value (a slider at 1 is not "Item 1").
    const hay = [name, text, attr(el, 'placeholder'), attr(el, 'aria-label'), titleOf(el), idOf(el),
      attr(el, 'name'), attr(el, 'type'), isInteractive ? textOfIds(el, 'aria-describedby') : '', around]
      .map(squash).filter(Boolean).join(' ').toLowerCase();
    const lname = name.toLowerCase();
    const tag = tagOf(el);
    const textual = r === 'textbox' || r === 'searchbox';
    const oneLine = tag === 'INPUT' && NOT_TEXT.has(typeOf(el));
    // A clickable element without a role (a div with a click handler) is what
    // a person calls a button or a link too.
    let clickable = null;
    const isKind = (t) => {
      if (!r && (t === 'button' || t === 'btn' || t === 'link' || t === 'links')) {
        if (clickable === null) clickable = isInteractive || styleOf(el).cursor === 'pointer';
        return clickable;
      }
      if (!r || !ROLE_WORDS[t].includes(r)) return false;
      return !(TEXT_WORDS.has(t) && oneLine);
    };
    let score = 0, matched = 0, textHits = 0, kindHit = false, roleHit = false, named = 0;
    for (const t of tokens) {
      const roleWord = ROLE_WORDS[t] !== undefined;
      if (roleWord && isKind(t)) {
        // "option", "button", "field": a word for the kind of element, met by its role.
        roleHit = true;
        if (KIND_WORDS.has(t)) kindHit = true;
        score += 1.5;
        continue;
      }
      const whole = wholeRe.get(t).test(hay);
      if (roleWord) {
        // The same word in the text is a weak hint ("source-option" in a
        // sentence); in the element's own name it is what it is called.
        if (whole) score += 0.5;
        if (whole && wholeRe.get(t).test(lname + ' ' + text.toLowerCase())) named++;
        continue;
      }
      if (whole || (!needsWhole(t) && hay.includes(t))) {
        matched++; textHits++;
        score += whole ? 3 : 2;
        // A word in the element's own name says more than one in its surroundings.
        if (lname.includes(t)) score += 0.5;
      }
    }
    // A named control whose name leaves words unmet is told apart by its row or
    // section: "Red scarf remove button" among two "Remove" buttons.
    if (isInteractive && name && matched && matched < content.length) {
      const ctx = context(el);
      const lctx = ctx.toLowerCase();
      for (const t of content) {
        if (!wholeRe.get(t).test(hay) && !(!needsWhole(t) && hay.includes(t)) &&
            (wholeRe.get(t).test(lctx) || (!needsWhole(t) && lctx.includes(t)))) { matched++; score += 1; around = ctx; }
      }
    }
    if (!matched && !roleHit && !named) continue;
    if (!shown(el)) continue;
    // Every content word met; a kind word, if any, met by the role; with
    // only role words, the role or the words in its own name or text.
    const complete = matched === content.length && (!kinds.length || kindHit) &&
      (content.length > 0 || roleHit || named === tokens.length);
    if (lname && lname.includes(query)) score += 3;
    // Something to act on, with a name, is what a description usually means; a
    // paragraph or a bare container that mentions the words is a weaker match.
    if (isInteractive) score += name ? 2 : 1;
    else if (!NAME_FROM_CONTENT.has(r) && r !== 'img') score -= 1;
    // Text that is nothing but the words asked for (a suggestion "JavaScript")
    // beats text that mentions them (a paragraph about JavaScript).
    const shownWords = words(name || text);
    const exact = shownWords.length > 0 && shownWords.every((w) => tokens.includes(w)) &&
      content.every((t) => shownWords.includes(t)) && (content.length > 0 || tokens.some((t) => shownWords.includes(t)));
    if (exact) score += 2;
    // "editor", "text area": a place for longer text over a one-line field.
    if (longText && textual && (tag === 'TEXTAREA' || editable(el) || attr(el, 'aria-multiline') === 'true')) score += 3;
    const pointer = !isInteractive && styleOf(el).cursor === 'pointer';
    if (pointer) score += 1;
    // Long text means a container that merely includes the words.
    score -= Math.min(2, text.length / 400);
    // An exact name or text outranks every looser match.
    if (complete && exact) score += 20;
    const entry = { el, r, score, text, around, pointer, depth: frameDepth(el), exact: complete && exact };
    if (complete) scored.push(entry);
    else if (textHits > 0 || (!content.length && (roleHit || named))) near.push(entry);
  }
  const rank = (x, y) => (y.score - x.score) || (x.depth - y.depth);
  scored.sort(rank);
  near.sort(rank);
  // Elements that fit equally well: a description names none of them for an
  // action, unless one is the page's own among copies in its frames, or
  // exactly one is on screen (the search box of a bar a page repeats at its
  // foot), which is the one a person looking at it means.
  const top = scored.length ? scored.filter((s) => s.score === scored[0].score).slice(0, 50) : [];
  let tied = top.length;
  const promote = (s) => { scored.splice(scored.indexOf(s), 1); scored.unshift(s); tied = 1; };
  if (tied > 1) {
    const shallow = Math.min.apply(null, top.map((s) => s.depth));
    const own = top.filter((s) => s.depth === shallow);
    if (own.length === 1) promote(own[0]);
    else {
      const vw = window.innerWidth, vh = window.innerHeight;
      const onScreen = own.filter((s) => {
        const b = rectOf(s.el), off = frameOffset(s.el);
        return b.right + off.x > 0 && b.bottom + off.y > 0 && b.left + off.x < vw && b.top + off.y < vh;
      });
      if (onScreen.length === 1) promote(onScreen[0]);
      else tied = own.length;
    }
  }
  const shape = (s) => {
    const d = describe(s.el, s.r);
    // An element without a name (a suggestion in a list of divs, say) is named by
    // the text that matched.
    if (!d.name && s.text) d.text = cut(s.text, MAX_NAME);
    if (s.around) d.context = s.around;
    if (s.pointer) d.clickable = true;
    if (s.exact) d.exact = true;
    const box = rectOf(s.el);
    const off = frameOffset(s.el);
    d.box = [Math.round(box.left + off.x), Math.round(box.top + off.y), Math.round(box.width), Math.round(box.height)];
    const host = hostFrame(s.el);
    if (host) d.frame = refOf(host);
    return d;
  };
  const matches = scored.slice(0, limit).map(shape);
  const partial = near.slice(0, limit).map(shape);
  return {
    status: 'ok', matches, total: scored.length, partial_matches: partial, partial_total: near.length,
    partial: !scored.length && near.length > 0, tied,
    scores: scored.slice(0, limit).map((s) => s.score), partial_scores: near.slice(0, limit).map((s) => s.score),
  };
}

// The element an action names: `a.ref`, or the best match for the description
// `a.find` when every word of it matched and no other element matched as well
// (an action on one of several equal candidates would be a guess).
function target() {
  if (typeof a.find !== 'string') return lookup(a.ref);
  const res = find(a.find, 5);
  if (!res.matches.length) return { status: 'no-match', near: res.partial_matches.slice(0, 3) };
  if (res.tied > 1) return { status: 'ambiguous', matches: res.matches.slice(0, Math.min(5, res.tied)) };
  return lookup(res.matches[0].ref);
}

function disabled(el) {
  if (matchesOf(el, ':disabled')) return true;
  for (let n = el; n && nodeTypeOf(n) === 1; n = flatParent(n)) {
    if (attr(n, 'aria-disabled') === 'true') return true;
  }
  return false;
}

// Whether a running animation moves `el` (one on it or on an element it renders
// inside): only then is its box compared across frames, so a still page pays nothing.
function animated(el) {
  const doc = ownerOf(el);
  const all = get(DOM.docAnimations, doc);
  if (!all) return false;
  const running = arrayFrom(all).filter((an) => an.playState === 'running' && an.effect && an.effect.target);
  if (!running.length) return false;
  return running.some((an) => an.effect.target === el || deepContains(an.effect.target, el));
}

const frame = () => new Promise((r) => {
  // A tab that draws no frames (hidden, throttled) must not hold the call.
  const t = setTimeout(r, 100);
  requestAnimationFrame(() => { clearTimeout(t); r(); });
});

// Where a click on `a.ref` lands, if it can land now: the element is connected,
// visible, enabled (when `a.enabled`), still (not being moved by an animation) and
// the point at its centre reaches it. Any other answer says what to wait for.
async function point() {
  const found = target();
  if (found.status !== 'ok') return found;
  const el = found.el;
  const what = describe(el, role(el));
  if (!shown(el)) return { status: 'hidden', what };
  if (a.enabled && disabled(el)) return { status: 'disabled', what };
  const vw = window.innerWidth, vh = window.innerHeight;
  const view = viewOf(ownerOf(el)) || window;
  const inView = () => {
    const off = frameOffset(el);
    const b = rectOf(el);
    const fw = view.innerWidth, fh = view.innerHeight;
    return b.width > 0 && b.height > 0 && b.left >= 0 && b.top >= 0 && b.right <= fw && b.bottom <= fh &&
      b.left + off.x >= 0 && b.top + off.y >= 0 && b.right + off.x <= vw && b.bottom + off.y <= vh;
  };
  // Scroll only what is not fully in view: scrolling a visible element moves the
  // page under an agent that has just looked at it.
  if (!inView()) scrollIntoViewOf(el, { block: 'center', inline: 'center', behavior: 'instant' });
  if (animated(el)) {
    const b0 = rectOf(el);
    await frame();
    // Page code ran during the wait: the kept built-ins go back in for the rest.
    hold();
    try {
      const b1 = rectOf(el);
      if (b0.left !== b1.left || b0.top !== b1.top || b0.width !== b1.width || b0.height !== b1.height) {
        return { status: 'moving', what };
      }
      return landing(el, what, vw, vh, view);
    } finally {
      release();
    }
  }
  return landing(el, what, vw, vh, view);
}

// The rest of `point`: where a press at the centre of `el`'s visible box lands.
function landing(el, what, vw, vh, view) {
  const off = frameOffset(el);
  const fw = view.innerWidth, fh = view.innerHeight;
  const rects = rectsOf(el).filter((b) => b.width > 0 && b.height > 0);
  const box = rects.find((b) => b.right > 0 && b.bottom > 0 && b.left < fw && b.top < fh) || rects[0];
  if (!box) return { status: 'hidden', what };
  const left = Math.max(box.left + off.x, off.x, 0), right = Math.min(box.right + off.x, off.x + fw, vw);
  const top = Math.max(box.top + off.y, off.y, 0), bottom = Math.min(box.bottom + off.y, off.y + fh, vh);
  if (right <= left || bottom <= top) return { status: 'offscreen', what };
  const x = Math.floor((left + right) / 2), y = Math.floor((top + bottom) / 2);
  const hit = deepHit(x, y);
  if (!reaches(el, hit)) {
    const by = hit ? describe(hit, role(hit)) : null;
    return { status: 'covered', x, y, by, what };
  }
  return { status: 'ok', x, y, what };
}

const setValue = (el, v) => setField(el, 'value', v);

// An event the page handles as the browser's own `input` or `change`. The
// constructor and dispatchEvent are the ones kept at the start.
function fire(el, type) {
  const e = new EventCtor(type, { bubbles: true });
  asPage(() => apply(DOM.dispatch, el, [e]));
}
const focusOn = (el) => asPage(() => apply(DOM.focus, el, []));
const clickOn = (el) => asPage(() => apply(DOM.click, el, []));

// What a field of each type takes, for a value its type turns into "".
const FORMATS = Object.assign(Object.create(null), {
  date: 'yyyy-mm-dd', 'datetime-local': 'yyyy-mm-ddThh:mm', month: 'yyyy-mm', week: 'yyyy-Www',
  time: 'hh:mm or hh:mm:ss', number: 'a number',
});

// What the browser itself makes of `v` in a field like `el` (a detached input
// of the same type and limits): a range snaps to its step and bounds, a number
// or a date is "" when it cannot be one, an email loses surrounding spaces.
function sanitized(el, v) {
  const probe = get(DOM.createElement, ownerOf(el), ['input']);
  if (!probe) return null;
  for (const name of ['type', 'min', 'max', 'step']) {
    const value = attr(el, name);
    if (value !== null) probe.setAttribute(name, value);
  }
  try { probe.value = v; } catch (e) { return null; }
  return fieldValue(probe);
}

// Letters and digits only, lower case: a value through an input mask
// ("5551234567" shown as "(555) 123-4567").
function alnum(s) {
  return Str(s).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
}

const numeric = (s) => typeof s === 'string' && s.trim() !== '' && Number.isFinite(Number(s));

// Whether `el` holds `v` (what form_input was asked to set) now, in some form
// the field or the app legitimately makes of it: an option by value or by
// label; a checkbox's state; the browser's own sanitizing (a range's step, an
// email's spaces); the same number written another way ("1.50" as "1.5"); text
// cut at maxlength; the same letters and digits through an input mask;
// surrounding or repeated whitespace.
function keeps(el, v) {
  const t = tagOf(el);
  if (t === 'SELECT') {
    const wanted = (Array.isArray(v) ? v : [v]).map((w) => Str(w));
    const picked = arrayFrom(field(el, 'selectedOptions') || []);
    const fits = (o, w) => field(o, 'value') === w || squash(get(DOM.optionText, o)).toLowerCase() === squash(w).toLowerCase();
    return picked.length === wanted.length && wanted.every((w) => picked.some((o) => fits(o, w)));
  }
  const asked = Array.isArray(v) ? v.map((w) => Str(w)).join(', ') : Str(v);
  if (t !== 'INPUT' && t !== 'TEXTAREA') {
    if (role(el) === 'slider') {
      const now = attr(el, 'aria-valuenow');
      return numeric(now) && numeric(asked) && Number(now) === Number(asked);
    }
    if (editable(el)) return squash(innerTextOf(el)) === squash(asked);
    return true;
  }
  const type = t === 'INPUT' ? typeOf(el) : 'textarea';
  if (type === 'checkbox' || type === 'radio') {
    const want = v === true || v === 1 || ['true', 'on', 'yes', 'checked', '1'].includes(asked.toLowerCase());
    return (field(el, 'checked') === true) === want;
  }
  const now = fieldValue(el);
  if (now === asked || squash(now) === squash(asked)) return true;
  if (numeric(now) && numeric(asked) && Number(now) === Number(asked)) return true;
  if (t === 'INPUT') {
    const made = sanitized(el, asked);
    if (made && (now === made || (numeric(now) && numeric(made) && Number(now) === Number(made)))) return true;
  }
  const max = field(el, 'maxLength');
  if (max > 0 && asked.length > max && now === asked.slice(0, max)) return true;
  return alnum(asked) !== '' && alnum(now) === alnum(asked);
}

// form_input's read-back (page.rs), once the page settled: whether `a.ref`
// still holds `a.value`, and what it shows.
function kept() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return found;
  const el = found.el;
  return { status: 'ok', keeps: keeps(el, a.value), what: describe(el, role(el)) };
}

// The element that has the focus, through open shadow roots and same-origin frames.
function focused() {
  let f = get(DOM.docActive, document);
  for (;;) {
    const sr = f && shadowOf(f), fd = f && frameDoc(f);
    if (sr && get(DOM.shadowActive, sr)) f = get(DOM.shadowActive, sr);
    else if (fd && get(DOM.docActive, fd)) f = get(DOM.docActive, fd);
    else return f || null;
  }
}

const isRange = (el) => tagOf(el) === 'INPUT' && typeOf(el) === 'range';

// A read-only input that a slider widget of the page sets (ion.rangeSlider's
// hidden input under a Shiny or Bootstrap slider): its label names it, it
// holds the value the app reads, and the widget beside it is what a person
// moves. The widget: the first shown element beside the input (within its two
// nearest ancestors) that takes the keyboard focus and is a slider, or is a
// track (three times as wide as tall). Only a numeric value: a range ("3;7")
// has two thumbs, which form_input cannot tell apart. Null otherwise. The
// slider route (slider.rs) focuses the widget, moves it by keys or a press on
// its track, and reads the value back from the input.
function widgetOf(el) {
  if (tagOf(el) !== 'INPUT' || field(el, 'readOnly') !== true || !numeric(fieldValue(el))) return null;
  for (let n = parentElOf(el), hops = 0; n && hops < 2; n = parentElOf(n), hops++) {
    for (const c of qsa(n, '[tabindex], [role="slider"]')) {
      if (c === el || deepContains(c, el) || Number(attr(c, 'tabindex') || 0) < 0 || !shown(c)) continue;
      const b = rectOf(c);
      if (ACC.role(c) === 'slider' || (b.width > 0 && b.width >= 3 * b.height)) return c;
    }
  }
  return null;
}
// widgetOf, once per element and call (role() asks for every input it sees).
const carriers = new WeakMap();
function carried(el) {
  if (field(el, 'readOnly') !== true) return null;
  if (!carriers.has(el)) carriers.set(el, widgetOf(el));
  return carriers.get(el);
}

// A slider's state for the keyboard route (slider.rs): its value and bounds,
// its step (null for an ARIA slider, which does not say: slider.rs measures
// it), whether it has the focus, and which arrows move it.
function sliderState(el) {
  const out = { what: describe(el, role(el)), focused: false };
  const num = (name, dflt) => { const x = attr(el, name); return numeric(x) ? Number(x) : dflt; };
  const widget = tagOf(el) === 'INPUT' ? carried(el) : null;
  if (widget) {
    // The widget's own settings, where the input carries them (ion.rangeSlider's
    // data-min, data-max, data-step); else its ARIA values; else unknown, and
    // slider.rs measures the step. No Home or End: such widgets seldom take them.
    out.kind = 'widget';
    const setting = (name, aria) => {
      const x = attr(el, 'data-' + name);
      if (numeric(x)) return Number(x);
      const y = aria ? attr(widget, aria) : null;
      return numeric(y) ? Number(y) : null;
    };
    out.min = setting('min', 'aria-valuemin');
    out.max = setting('max', 'aria-valuemax');
    const step = setting('step', null);
    out.step = step !== null && step > 0 ? step : null;
    out.ends = false;
  } else if (isRange(el)) {
    out.kind = 'range';
    out.min = num('min', 0);
    out.max = num('max', 100);
    const step = Str(attr(el, 'step') || '').toLowerCase();
    out.step = step === 'any' ? null : (numeric(step) && Number(step) > 0 ? Number(step) : 1);
  } else {
    out.kind = 'aria';
    out.value = num('aria-valuenow', null);
    out.min = num('aria-valuemin', 0);
    out.max = num('aria-valuemax', 100);
    out.step = null;
  }
  if (out.kind !== 'aria') {
    const v = fieldValue(el);
    out.value = numeric(v) ? Number(v) : null;
  }
  // What a person moves (the widget beside a carrying input): its orientation,
  // its state and whether it has the focus.
  const moved = widget || el;
  out.vertical = Str(attr(moved, 'aria-orientation') || '').toLowerCase() === 'vertical';
  out.disabled = disabled(el) || (widget !== null && disabled(widget));
  const f = focused();
  out.focused = !!f && (f === moved || deepContains(moved, f));
  return out;
}

// The slider `a.ref`: its state, after giving it the focus when `a.focus`.
// Focus is not a click: an overlay over the slider (a transparent layer a data
// app draws over its widgets) does not stop it, and keys then go to the slider.
function slider() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return found;
  const el = found.el;
  if (!isRange(el) && role(el) !== 'slider') return { status: 'not-a-slider', what: describe(el, role(el)) };
  if (a.focus && !disabled(el) && !sliderState(el).focused) {
    const to = carried(el) || el;
    try { asPage(() => apply(DOM.focus, to, [{ preventScroll: true }])); } catch (e) { /* answered as not focused */ }
    // A slider whose role sits on a wrapper takes the focus on its thumb.
    const thumb = sliderState(el).focused ? null : qsa(to, 'input, button, [tabindex]')[0];
    if (thumb) {
      try { asPage(() => apply(DOM.focus, thumb, [{ preventScroll: true }])); } catch (e) { /* as above */ }
    }
  }
  return Object.assign(sliderState(el), { status: 'ok' });
}

// Where a press on the slider `a.ref`'s track lands for the value `a.value`
// (slider.rs, when keys cannot reach it): the track is a range input itself,
// an ARIA slider at least three times as wide as tall, or else (the role on
// the thumb) the nearest of its three closest ancestors that is three times
// as wide as it. Scrolled into view when outside; `covered` (with what is on
// top) when a press there would not reach the track.
function sliderPoint() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return found;
  const el = carried(found.el) || found.el;
  const s = sliderState(found.el);
  if (s.min === null || s.max === null) return { status: 'no-track', what: s.what };
  const wide = (n) => { const b = rectOf(n); return b.width >= 3 * b.height && b.width > 0; };
  let track = isRange(el) || wide(el) ? el : null;
  for (let n = parentElOf(el), hops = 0; !track && n && hops < 3; n = parentElOf(n), hops++) {
    if (rectOf(n).width >= 3 * Math.max(1, rectOf(el).width)) track = n;
  }
  if (!track || s.max === s.min || !shown(el)) return { status: 'no-track', what: s.what };
  const inView = () => { const b = rectOf(track), o = frameOffset(track); return b.top + o.y >= 0 && b.bottom + o.y <= window.innerHeight; };
  if (!inView()) scrollIntoViewOf(track, { block: 'center', inline: 'nearest', behavior: 'instant' });
  const b = rectOf(track), o = frameOffset(track);
  const fraction = Math.max(0, Math.min(1, (Number(a.value) - s.min) / (s.max - s.min)));
  // A range input's thumb travels inside its box, half a thumb from each end.
  const inset = isRange(el) ? Math.min(8, b.width / 10) : 0;
  const x = Math.round(b.left + o.x + inset + fraction * (b.width - 2 * inset));
  const y = Math.round(b.top + o.y + b.height / 2);
  const hit = deepHit(x, y);
  if (!reaches(track, hit) && !reaches(el, hit)) {
    return { status: 'covered', x, y, by: hit ? describe(hit, role(hit)) : null, what: s.what };
  }
  return { status: 'ok', x, y, what: s.what };
}

// Typing checked (computer type, computer.rs): `type_begin` notes the text
// field that has the focus and its value (in the page: a password never
// leaves it); `type_check` says, once the page settled, whether the field
// still holds what was typed. Not checked: text with Enter or Tab (the app
// takes the field's text away, or the focus moves), a field that lost the
// focus, anything but an input or textarea (rich editors transform what they
// get).
// Date and time fields show typed digits in their own order ("12312024" as
// "2024-12-31"): not checked either.
const NOT_TYPED = new Set(['checkbox', 'radio', 'range', 'file', 'color', 'submit', 'button', 'reset', 'image', 'hidden',
  'date', 'time', 'datetime-local', 'month', 'week']);
function typeBegin() {
  const el = focused();
  const t = el ? tagOf(el) : '';
  const textual = t === 'TEXTAREA' || (t === 'INPUT' && !NOT_TYPED.has(typeOf(el)));
  reg.typing = textual ? { el: new WeakRef(el), before: fieldValue(el) } : null;
  return { status: 'ok', field: textual };
}

function typeCheck() {
  const noted = reg.typing;
  reg.typing = null;
  const el = noted && noted.el.deref();
  if (!el || !connected(el) || focused() !== el) return { status: 'ok', checked: false };
  const text = Str(a.text || '');
  if (/[\n\r\t]/.test(text) || alnum(text) === '') return { status: 'ok', checked: false };
  const now = fieldValue(el);
  const max = field(el, 'maxLength');
  const held = now.includes(text) || alnum(now).includes(alnum(text)) ||
    // Cut at maxlength: the field filled up with what fit of it.
    (max > 0 && now.length >= max && now !== noted.before);
  const out = { status: 'ok', checked: true, keeps: held, reverted: now === noted.before, what: describe(el, role(el)) };
  // A field the app empties as it takes the text (a tag input makes a chip of
  // "python,"): the text shows elsewhere on the page, so it was not refused.
  if (!held && alnum(text).length >= 2) {
    const body = bodyOf(ownerOf(el));
    if (body && alnum(innerTextOf(body)).includes(alnum(text))) { out.keeps = true; out.taken = true; }
  }
  if (tagOf(el) === 'INPUT' && typeOf(el) === 'password') out.secret = true;
  return out;
}

function formInput() {
  const found = target();
  if (found.status !== 'ok') return found;
  const el = found.el;
  const r = role(el);
  if (matchesOf(el, ':disabled')) return { status: 'disabled', what: describe(el, r) };
  const v = a.value;
  const t = tagOf(el);
  // A read-only field is the page's own to set (a slider widget's hidden input,
  // a computed total): a value written there is one no user could give, and
  // the app, which listens to its widget, may never take it.
  if (field(el, 'readOnly') === true || attr(el, 'aria-readonly') === 'true') {
    if (carried(el) && !a.direct) return Object.assign(sliderState(el), { status: 'slider' });
    return { status: 'readonly', what: describe(el, r) };
  }
  // A slider is set the way a person sets it, by keys (form_input in page.rs):
  // a data app's slider commits on key or pointer release, never on a value
  // written into its input. `a.direct`: the keys could not reach it.
  if ((isRange(el) || r === 'slider') && !a.direct) return Object.assign(sliderState(el), { status: 'slider' });
  if (t === 'SELECT') {
    const wanted = Array.isArray(v) ? arrayFrom(v, (x) => Str(x)) : [Str(v)];
    const opts = arrayFrom(field(el, 'options') || []);
    const text = (o) => squash(get(DOM.optionText, o));
    const value = (o) => get(DOM.optionValue, o);
    const pick = (w) => {
      for (const o of opts) if (value(o) === w) return o;
      for (const o of opts) if (text(o) === squash(w)) return o;
      for (const o of opts) if (text(o).toLowerCase() === squash(w).toLowerCase()) return o;
      return null;
    };
    const chosen = arrayFrom(wanted, pick);
    if (chosen.some((o) => !o)) {
      return { status: 'no-option', what: describe(el, r), options: arrayFrom(opts, text) };
    }
    if (field(el, 'multiple') === true) for (const o of opts) apply(DOM.setSelected, o, [chosen.includes(o)]);
    else setValue(el, value(chosen[0]));
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (t === 'INPUT') {
    const type = typeOf(el);
    if (type === 'checkbox' || type === 'radio') {
      const want = v === true || v === 1 || ['true', 'on', 'yes', 'checked', '1'].includes(Str(v).toLowerCase());
      if (field(el, 'checked') !== want) {
        if (want || type === 'checkbox') clickOn(el);
        else { setField(el, 'checked', false); fire(el, 'input'); fire(el, 'change'); }
      }
      return { status: 'ok', what: describe(el, r) };
    }
    if (type === 'file') return { status: 'unsupported', what: describe(el, r) };
    // A value the field's type cannot hold ("12/31/2024" in a date field) would
    // be set as "" and reported as done: say what the field takes instead.
    if (FORMATS[type] && Str(v) !== '' && sanitized(el, Str(v)) === '') {
      return { status: 'bad-format', what: describe(el, r), format: FORMATS[type] };
    }
    focusOn(el);
    setValue(el, Str(v));
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (t === 'TEXTAREA') {
    focusOn(el);
    setValue(el, Str(v));
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (editable(el)) {
    focusOn(el);
    apply(DOM.setText, el, [Str(v)]);
    fire(el, 'input');
    return { status: 'ok', what: describe(el, r) };
  }
  return { status: 'not-a-field', what: describe(el, r) };
}

function scrollTo() {
  const found = target();
  if (found.status !== 'ok') return found;
  scrollIntoViewOf(found.el, { block: 'center', inline: 'center', behavior: 'instant' });
  return { status: 'ok', what: describe(found.el, role(found.el)) };
}

function pageText() {
  const body = bodyOf(document) || rootOf(document);
  return { status: 'ok', url: location.href, title: Str(get(DOM.docTitle, document) || ''), text: body ? innerTextOf(body) : '' };
}

function info() {
  return {
    status: 'ok', url: location.href, title: Str(get(DOM.docTitle, document) || ''), readyState: get(DOM.readyState, document),
    width: window.innerWidth, height: window.innerHeight, dpr: window.devicePixelRatio,
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits (at most `max_ms`) for a page that is still loading: until the document
// has loaded and, on a page younger than `young_ms`, until its DOM and the
// requests it started have been quiet for `quiet_ms`. An old, idle page answers
// at once.
async function ready() {
  const max = a.max_ms || 2000, quiet = a.quiet_ms || 50, young = a.young_ms || 3000;
  const t0 = performance.now();
  let last = t0;
  const mo = new MutationObserver(() => { last = performance.now(); });
  mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  try {
    for (;;) {
      const now = performance.now();
      const loaded = document.readyState === 'complete';
      const still = now - last >= quiet && !net().inflight;
      if (loaded && (now >= young || still)) return { status: 'ok', waited_ms: Math.round(now - t0), age_ms: Math.round(now) };
      if (now - t0 >= max) return { status: 'ok', waited_ms: Math.round(now - t0), age_ms: Math.round(now), loading: true };
      await sleep(20);
    }
  } finally {
    mo.disconnect();
  }
}

// One look for wait_for_page: `{found, url, match?}`; `bad` names an argument the
// page cannot use (an invalid regex or selector).
function probe() {
  const out = { status: 'ok', url: location.href, found: false };
  if (a.condition === 'url_matches') {
    if (a.regex) {
      let re;
      try { re = new RegExp(a.pattern); } catch (e) { return { status: 'ok', bad: 'pattern', message: String(e.message || e) }; }
      out.found = re.test(location.href);
    } else {
      out.found = location.href.includes(a.pattern);
    }
    return out;
  }
  if (a.condition === 'network_idle') {
    let lastEnd = 0;
    for (const e of performance.getEntriesByType('resource')) lastEnd = Math.max(lastEnd, e.responseEnd || 0);
    const n = net();
    const quietFor = performance.now() - Math.max(lastEnd, n.last);
    out.found = document.readyState === 'complete' && !n.inflight && quietFor >= (a.idle_ms || 500);
    out.inflight = n.inflight;
    return out;
  }
  let root = document;
  if (a.scope) {
    try { root = document.querySelector(a.scope); } catch (e) { return { status: 'ok', bad: 'scope', message: 'not a CSS selector: ' + (e.message || e) }; }
    if (!root) { out.scope_missing = true; return out; }
  }
  let el = null;
  if (a.by === 'ref') {
    const found = lookup(a.pattern);
    if (found.status === 'ok' && shown(found.el)) el = found.el;
  } else if (a.by === 'description') {
    const res = find(a.pattern, 1);
    if (res.matches.length && !res.partial) {
      const m = lookup(res.matches[0].ref);
      if (m.status === 'ok' && (root === document || deepContains(root, m.el))) el = m.el;
    }
  } else {
    const cs = !!a.case_sensitive;
    let test;
    if (a.by === 'regex') {
      let re;
      try { re = new RegExp(a.pattern, cs ? 'u' : 'iu'); } catch (e) { return { status: 'ok', bad: 'pattern', message: String(e.message || e) }; }
      test = (t) => re.test(t);
    } else {
      const needle = cs ? a.pattern : a.pattern.toLowerCase();
      test = (t) => (cs ? t : t.toLowerCase()).includes(needle);
    }
    let candidates;
    if (a.by === 'selector') {
      try { candidates = Array.from(root.querySelectorAll(a.pattern)); } catch (e) { return { status: 'ok', bad: 'pattern', message: 'not a CSS selector: ' + (e.message || e) }; }
    } else {
      const want = a.pattern.trim().toLowerCase();
      candidates = allElements(root === document ? (document.body || document.documentElement) : root).filter((e) => {
        if (SKIP.has(tagOf(e))) return false;
        if (a.by === 'role') return role(e) === want;
        if (a.by === 'aria_label') { const l = attr(e, 'aria-label') || ''; return l !== '' && test(l); }
        const t = squash(ownText(e) || (shadowOf(e) || tagOf(e) === 'SLOT' ? flatText(e, 300) : ''));
        return t !== '' && test(t);
      });
    }
    el = candidates.find(shown) || null;
  }
  if (el) {
    out.found = true;
    const d = describe(el, role(el));
    out.match = { ref: d.ref, tag: tagOf(el).toLowerCase(), role: d.role, text: cut(ownText(el) || textOf(el), 120) };
    if (d.name) out.match.name = d.name;
    if (el.id) out.match.id = el.id;
  }
  return out;
}

// read_console_messages and read_network_requests: what the page-realm hook
// recorded (`a.kind` console or requests), filtered, the last `a.limit` of
// the matches; `clear` empties the ring. The plugin bounds the reply and says
// from when capture ran (logs.rs).
function logs() {
  const n = (window.wrappedJSObject || window).__stephostNet;
  let re = null;
  if (a.pattern) {
    try { re = new RegExp(a.pattern, 'i'); } catch (e) { return { status: 'ok', bad: 'pattern', message: String(e.message || e) }; }
  }
  const hooked = !!(n && typeof n.take === 'function');
  const rec = hooked ? JSON.parse(String(n.take(a.kind, !!a.clear))) : { items: [], dropped: 0, since: null, early: false, cleared: 0 };
  const origin = performance.timeOrigin;
  let items;
  if (a.kind === 'console') {
    items = rec.items.filter((m) => (!a.only_errors || m.level === 'error') &&
      (!re || re.test(m.text) || (m.source && re.test(m.source))));
  } else {
    items = requests(rec).filter((r) => (!a.only_errors || r.failed || r.status >= 400) &&
      (!a.url_pattern || r.url.includes(a.url_pattern)));
  }
  return {
    status: 'ok', url: location.href, hooked, early: !!rec.early, since: rec.since, origin,
    now: origin + performance.now(), dropped: rec.dropped || 0, matched: items.length,
    items: items.slice(-(a.limit || 100)),
  };
}

const INITIATOR = { xmlhttprequest: 'xhr', link: 'stylesheet', navigation: 'document' };

// The document's requests: resource timing (everything since the navigation
// started, finished ones) joined with the hook's fetch/XHR records (method,
// status, failures, and those still running), oldest first; `time` in epoch ms.
function requests(rec) {
  const origin = performance.timeOrigin, cleared = rec.cleared || 0;
  const own = rec.items, used = new Set(), out = [];
  const nav = performance.getEntriesByType('navigation')[0];
  if (nav && !cleared) {
    const d = { url: String(nav.name).slice(0, 1000), type: 'document', start: 0, duration_ms: Math.round(nav.duration || 0) };
    if (nav.responseStatus > 0) d.status = nav.responseStatus;
    if (nav.transferSize || nav.encodedBodySize) d.size = nav.transferSize || nav.encodedBodySize;
    out.push(d);
  }
  for (const e of performance.getEntriesByType('resource')) {
    if (e.startTime < cleared) continue;
    const r = { url: String(e.name).slice(0, 1000), type: INITIATOR[e.initiatorType] || e.initiatorType || 'other', start: e.startTime, duration_ms: Math.round(e.duration) };
    if (e.responseStatus > 0) r.status = e.responseStatus;
    if (e.transferSize || e.encodedBodySize) r.size = e.transferSize || e.encodedBodySize;
    if (e.initiatorType === 'fetch' || e.initiatorType === 'xmlhttprequest') {
      // The hook's record of it: the same URL, started closest (within 500 ms).
      let best = -1, gap = 500;
      own.forEach((h, i) => {
        const g = Math.abs(h.start - e.startTime);
        if (!used.has(i) && h.url === r.url && g < gap) { best = i; gap = g; }
      });
      if (best >= 0) {
        used.add(best);
        const h = own[best];
        r.method = h.method;
        r.type = h.type;
        if (h.status) r.status = h.status;
        if (h.failed) r.failed = h.failed;
      }
    } else {
      r.method = 'GET';
    }
    out.push(r);
  }
  own.forEach((h, i) => {
    if (used.has(i)) return;
    const r = { method: h.method, url: h.url, type: h.type, start: h.start };
    if (h.end === undefined) r.pending = true; else r.duration_ms = Math.round(h.end - h.start);
    if (h.status) r.status = h.status;
    if (h.failed) r.failed = h.failed;
    out.push(r);
  });
  out.sort((x, y) => x.start - y.start);
  for (const r of out) { r.time = origin + r.start; delete r.start; }
  return out;
}

const ASYNC = { ready, point };
if (ASYNC[op]) {
  const done = arguments[arguments.length - 1];
  ASYNC[op]().then(
    (r) => { r.next = reg.next; done(r); },
    (e) => done({ status: 'error', message: String((e && e.message) || e), next: reg.next }),
  );
  return;
}
// The element itself, which WebDriver hands back as an element reference (for
// commands that take one, such as a file input's send keys).
function element() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return { status: found.status };
  const el = found.el;
  return {
    status: 'ok', el, tag: tagOf(el).toLowerCase(), type: Str(attr(el, 'type') || '').toLowerCase(),
    multiple: field(el, 'multiple') === true, disabled: matchesOf(el, ':disabled'), what: describe(el, role(el)),
  };
}

// What a screenshot covers (screenshot.rs): the page's scrollable size, the
// viewport, the scroll and the device pixel ratio; with `a.ref` / `a.find`, also
// the element's box in top-document CSS pixels (its frames' offsets and the
// scroll added), after scrolling it into view when it was not fully in view,
// and the element itself when it is in the top document (for the driver's
// element screenshot; an element of a frame cannot cross into it).
function shot() {
  const root = rootOf(document), body = bodyOf(document);
  const sw = own(Element, 'scrollWidth'), sh = own(Element, 'scrollHeight');
  const out = {
    status: 'ok', dpr: window.devicePixelRatio || 1, view: [window.innerWidth, window.innerHeight],
    size: [Math.max(get(sw, root) || 0, body ? get(sw, body) || 0 : 0), Math.max(get(sh, root) || 0, body ? get(sh, body) || 0 : 0)],
  };
  if (a.ref === undefined && a.find === undefined) {
    out.scroll = [window.scrollX, window.scrollY];
    return out;
  }
  const found = target();
  if (found.status !== 'ok') return found;
  const el = found.el;
  out.what = describe(el, role(el));
  if (!shown(el)) return { status: 'hidden', what: out.what };
  const inView = () => {
    const r = rectOf(el), o = frameOffset(el);
    return r.top + o.y >= 0 && r.left + o.x >= 0 && r.bottom + o.y <= window.innerHeight && r.right + o.x <= window.innerWidth;
  };
  if (!inView()) scrollIntoViewOf(el, { block: 'nearest', inline: 'nearest', behavior: 'instant' });
  const r = rectOf(el), o = frameOffset(el);
  if (r.width < 1 || r.height < 1) return { status: 'hidden', what: out.what };
  out.scroll = [window.scrollX, window.scrollY];
  out.box = [r.left + o.x + window.scrollX, r.top + o.y + window.scrollY, r.width, r.height];
  const f = hostFrame(el);
  if (f) out.frame = describe(f, 'iframe').ref;
  else out.el = el;
  return out;
}

let result;
switch (op) {
  case 'read_page': result = readPage(); break;
  case 'find': result = find(); if (a.frames) result.frames = crossFrames(); break;
  case 'frame_point': result = framePoint(); break;
  case 'frame_reveal': result = frameReveal(); break;
  case 'input_frame': result = inputFrame(); break;
  case 'probe': result = probe(); break;
  case 'form_input': result = formInput(); break;
  case 'kept': result = kept(); break;
  case 'slider': result = slider(); break;
  case 'slider_point': result = sliderPoint(); break;
  case 'type_begin': result = typeBegin(); break;
  case 'type_check': result = typeCheck(); break;
  case 'scroll_to': result = scrollTo(); break;
  case 'text': result = pageText(); break;
  case 'info': result = info(); break;
  case 'element': result = element(); break;
  case 'shot': result = shot(); break;
  case 'logs': result = logs(); break;
  default: result = { status: 'bad-op' };
}
result.next = reg.next;
return result;
} finally {
  release();
}
