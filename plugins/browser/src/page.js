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
    const a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    if (a && !e.defaultPrevented && a.hasAttribute('download')) reg.downloading = performance.now();
    else if (a && !e.defaultPrevented && !a.getAttribute('href').startsWith('#') && a.target !== '_blank') mark();
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
  const hook = document.createElement('script');
  try { hook.textContent = /* HOOK-START */`(() => {
    if (window.__stephostNet) return;
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
    const setT = window.setTimeout, clearT = window.clearTimeout;
    let running = null;
    window.setTimeout = function (fn, ms, ...rest) {
      const delay = Number(ms) || 0;
      // A callback that sets itself again is a loop (polling, a clock), not
      // work an input started.
      if (typeof fn !== 'function' || delay < 10 || delay > 1000) return setT.call(this, fn, ms, ...rest);
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
  })();`/* HOOK-END */; } catch (e) { /* Trusted Types: see below */ }
  try {
    (document.head || document.documentElement).appendChild(hook);
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
  if (!el || !el.isConnected) return { status: 'detached' };
  return { status: 'ok', el };
}

function squash(s) {
  return (s || '').replace(/\s+/g, ' ').trim();
}

function cut(s, n) {
  s = squash(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

function role(el) {
  const explicit = el.getAttribute('role');
  if (explicit) return explicit.trim().split(/\s+/)[0];
  const t = el.tagName;
  switch (t) {
    case 'A': return el.hasAttribute('href') ? 'link' : null;
    case 'BUTTON': return 'button';
    case 'SUMMARY': return 'button';
    case 'SELECT': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
    case 'TEXTAREA': return 'textbox';
    case 'OPTION': return 'option';
    case 'IMG': return (el.getAttribute('alt') === '') ? null : 'img';
    case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
    case 'NAV': return 'navigation';
    case 'MAIN': return 'main';
    case 'ASIDE': return 'complementary';
    case 'FORM': return 'form';
    case 'UL': case 'OL': return 'list';
    case 'LI': return 'listitem';
    case 'TABLE': return 'table';
    case 'TR': return 'row';
    case 'TH': return 'columnheader';
    case 'TD': return 'cell';
    case 'DIALOG': return 'dialog';
    case 'FIELDSET': return 'group';
    case 'P': return 'paragraph';
    case 'LABEL': return 'label';
    case 'IFRAME': return 'iframe';
    case 'HEADER': return el.closest('article, section, main, aside, nav') ? null : 'banner';
    case 'FOOTER': return el.closest('article, section, main, aside, nav') ? null : 'contentinfo';
    case 'INPUT': {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      switch (type) {
        case 'hidden': return null;
        case 'checkbox': return 'checkbox';
        case 'radio': return 'radio';
        case 'button': case 'submit': case 'reset': case 'image': return 'button';
        case 'range': return 'slider';
        case 'number': return 'spinbutton';
        case 'search': return 'searchbox';
        default: return 'textbox';
      }
    }
  }
  if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'textbox';
  return null;
}

// Whether any element of the top document hosts an open shadow root: only then
// is the flat tree (slots, shadow content) different from what innerText reads.
let shadowy = null;
function hasShadow() {
  if (shadowy === null) {
    shadowy = false;
    for (const el of document.querySelectorAll('*')) if (el.shadowRoot) { shadowy = true; break; }
  }
  return shadowy;
}

// The content document of a same-origin frame; null for cross-origin ones.
function frameDoc(el) {
  if (el.tagName !== 'IFRAME' && el.tagName !== 'FRAME') return null;
  try {
    const d = el.contentDocument;
    return d && d.documentElement ? d : null;
  } catch (e) {
    return null;
  }
}

// An element's children as they render: a slot shows what is assigned to it
// (its fallback content otherwise), a shadow host shows its shadow tree.
function kids(el) {
  if (el.tagName === 'SLOT') {
    const assigned = el.assignedNodes({ flatten: true });
    return assigned.length ? assigned : Array.from(el.childNodes);
  }
  if (el.shadowRoot) return Array.from(el.shadowRoot.childNodes);
  return Array.from(el.childNodes);
}

// Text as it renders through slots and shadow trees, at most `max` characters.
// innerText stops at a slot, which is where a web component puts its label.
function flatText(el, max) {
  let out = '';
  const visit = (n) => {
    if (out.length >= max) return;
    if (n.nodeType === Node.TEXT_NODE) { out += n.textContent; return; }
    if (n.nodeType !== Node.ELEMENT_NODE || SKIP.has(n.tagName)) return;
    const s = getComputedStyle(n);
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
  return squash(el.innerText !== undefined ? el.innerText : el.textContent);
}

// The text of the elements an id-list attribute names (aria-labelledby,
// aria-describedby), looked up in the element's own tree (a shadow root has
// getElementById too).
function textOfIds(el, attr) {
  const by = el.getAttribute(attr);
  if (!by) return '';
  const tree = el.getRootNode && el.getRootNode().getElementById ? el.getRootNode() : el.ownerDocument;
  return by.split(/\s+/).map((id) => tree.getElementById(id)).filter(Boolean).map(textOf).join(' ');
}

function accName(el, r) {
  const labelled = textOfIds(el, 'aria-labelledby');
  if (squash(labelled)) return cut(labelled, MAX_NAME);
  const label = el.getAttribute('aria-label');
  if (squash(label)) return cut(label, MAX_NAME);
  const t = el.tagName;
  if (t === 'INPUT' || t === 'SELECT' || t === 'TEXTAREA') {
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (t === 'INPUT' && (type === 'submit' || type === 'button' || type === 'reset')) {
      return cut(el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : ''), MAX_NAME);
    }
    if (t === 'INPUT' && type === 'image') return cut(el.alt || el.value || '', MAX_NAME);
    if (el.labels && el.labels.length) {
      const text = Array.from(el.labels).map(textOf).join(' ');
      if (text) return cut(text, MAX_NAME);
    }
    if (el.placeholder) return cut(el.placeholder, MAX_NAME);
    if (el.title) return cut(el.title, MAX_NAME);
    return '';
  }
  if (t === 'IMG') return cut(el.getAttribute('alt') || el.title || '', MAX_NAME);
  // A rich-text editor's area: its hint is often only an attribute the editor
  // draws as a placeholder.
  if (r === 'textbox' && el.isContentEditable) {
    const hint = el.getAttribute('aria-placeholder') || el.getAttribute('placeholder') || el.getAttribute('data-placeholder');
    if (squash(hint)) return cut(hint, MAX_NAME);
  }
  // Containers (paragraphs, list items, cells) get no name: their text shows
  // as their children, once.
  if (r && (NAME_FROM_CONTENT.has(r) || INTERACTIVE_ROLES.has(r) || r === 'columnheader')) {
    const text = textOf(el);
    if (text) return cut(text, MAX_NAME);
    const img = el.querySelector('img[alt]');
    if (img) return cut(img.alt, MAX_NAME);
  }
  if (t === 'FIELDSET') {
    const legend = el.querySelector('legend');
    if (legend) return cut(textOf(legend), MAX_NAME);
  }
  return cut(el.title || '', MAX_NAME);
}

function interactive(el, r) {
  const t = el.tagName;
  if (t === 'A' && el.hasAttribute('href')) return true;
  if (t === 'BUTTON' || t === 'SELECT' || t === 'TEXTAREA' || t === 'SUMMARY') return true;
  if (t === 'INPUT') return (el.getAttribute('type') || '').toLowerCase() !== 'hidden';
  if (r && INTERACTIVE_ROLES.has(r)) return true;
  if (el.hasAttribute('onclick')) return true;
  const tabindex = el.getAttribute('tabindex');
  return tabindex !== null && Number(tabindex) >= 0;
}

function visible(el) {
  if (el.checkVisibility) {
    return el.checkVisibility({ visibilityProperty: true, checkVisibilityCSS: true });
  }
  const s = getComputedStyle(el);
  return s.display !== 'none' && s.visibility !== 'hidden' && el.getClientRects().length > 0;
}

function isContents(el) {
  return getComputedStyle(el).display === 'contents';
}

function valueOf(el) {
  const t = el.tagName;
  if (t === 'SELECT') {
    const picked = Array.from(el.selectedOptions || []).map((o) => squash(o.text));
    return picked.join(', ');
  }
  if (t === 'TEXTAREA') return el.value;
  if (t === 'INPUT') {
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (type === 'checkbox' || type === 'radio' || type === 'submit' || type === 'button' || type === 'reset') return null;
    if (type === 'password') return el.value ? '•'.repeat(Math.min(el.value.length, 12)) : '';
    return el.value;
  }
  if (el.isContentEditable) return textOf(el);
  return null;
}

function describe(el, r) {
  const out = { ref: refOf(el), role: r || el.tagName.toLowerCase(), name: accName(el, r) };
  const v = valueOf(el);
  if (v !== null) out.value = cut(v, 300);
  if (el.tagName === 'INPUT') {
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (type === 'checkbox' || type === 'radio') out.checked = el.checked;
    if (type !== 'text') out.type = type;
  }
  if (el.tagName === 'A' && el.hasAttribute('href')) out.href = el.getAttribute('href');
  if (r === 'heading') out.level = Number(el.tagName.slice(1)) || Number(el.getAttribute('aria-level')) || undefined;
  if (el.disabled) out.disabled = true;
  if (el.required) out.required = true;
  if (el.tagName === 'SELECT') {
    out.options = Array.from(el.options).slice(0, 50).map((o) => squash(o.text));
  }
  return out;
}

function line(d, depth) {
  let s = '  '.repeat(depth) + '- ' + d.role;
  if (d.name) s += ' ' + JSON.stringify(d.name);
  s += ' [' + d.ref + ']';
  if (d.level) s += ' level=' + d.level;
  if (d.type) s += ' type=' + d.type;
  if (d.value !== undefined) s += ' value=' + JSON.stringify(d.value);
  if (d.checked !== undefined) s += d.checked ? ' checked' : ' unchecked';
  if (d.href !== undefined) s += ' href=' + JSON.stringify(d.href);
  if (d.disabled) s += ' disabled';
  if (d.required) s += ' required';
  if (d.options) s += ' options=' + JSON.stringify(d.options);
  if (d.note) s += ' (' + d.note + ')';
  return s;
}

// Every element under `root`, open shadow roots and same-origin frames included
// (closed shadow roots and other origins' frames are out of reach by design), in
// document order with each shadow tree or frame document after its host.
function allElements(root) {
  const out = [];
  const visit = (node) => {
    for (const el of node.querySelectorAll('*')) {
      out.push(el);
      if (el.shadowRoot) visit(el.shadowRoot);
      const doc = frameDoc(el);
      if (doc) visit(doc);
    }
  };
  visit(root);
  return out;
}

// The frame element hosting `el`'s document, if it is a same-origin frame's.
function hostFrame(el) {
  const win = el.ownerDocument && el.ownerDocument.defaultView;
  if (!win || win === window) return null;
  try {
    return win.frameElement;
  } catch (e) {
    return null;
  }
}

// Where a frame element's content starts in the viewport of the document that
// holds it (inside its border and padding).
function contentOrigin(f) {
  const r = f.getBoundingClientRect();
  const s = getComputedStyle(f);
  return { x: r.left + f.clientLeft + parseFloat(s.paddingLeft || '0'), y: r.top + f.clientTop + parseFloat(s.paddingTop || '0') };
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
  return el.tagName === 'IFRAME' || el.tagName === 'FRAME';
}

function hopsTo(f) {
  const hops = [];
  for (let el = f; el; el = hostFrame(el)) {
    const win = el.ownerDocument.defaultView;
    if (!win) return null;
    let i = 0;
    while (i < win.length && win[i] !== el.contentWindow) i++;
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
    el = Array.from(win.document.querySelectorAll('iframe, frame')).find((f) => f.contentWindow === child) || null;
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
    for (const f of doc.querySelectorAll('iframe, frame')) {
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
  if (!f || !f.isConnected) return { status: 'detached' };
  if (!shown(f)) return { status: 'hidden' };
  const at = () => { const o = frameOrigin(f); return { x: o.x + a.x, y: o.y + a.y }; };
  const inView = (p) => p.x >= 0 && p.y >= 0 && p.x < window.innerWidth && p.y < window.innerHeight;
  let p = at();
  if (!inView(p)) {
    f.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
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
  if (!f || !f.isConnected) return { status: 'detached' };
  const b = f.getBoundingClientRect(), off = frameOffset(f);
  if (b.left + off.x < 0 || b.top + off.y < 0 || b.right + off.x > window.innerWidth || b.bottom + off.y > window.innerHeight) {
    f.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
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
    f = document.activeElement;
    for (;;) {
      if (f && f.shadowRoot && f.shadowRoot.activeElement) f = f.shadowRoot.activeElement;
      else if (f && frameDoc(f) && frameDoc(f).activeElement) f = frameDoc(f).activeElement;
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
  let hit = document.elementFromPoint(x, y);
  let ox = 0, oy = 0;
  for (;;) {
    if (!hit) return null;
    if (hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x - ox, y - oy);
      if (!inner || inner === hit) return hit;
      hit = inner;
      continue;
    }
    const doc = frameDoc(hit);
    if (doc) {
      const o = contentOrigin(hit);
      ox += o.x;
      oy += o.y;
      const inner = doc.elementFromPoint(x - ox, y - oy);
      if (!inner) return hit;
      hit = inner;
      continue;
    }
    return hit;
  }
}

// The parent in the tree as it renders: a slotted node's slot, a shadow root's host.
function flatParent(n) {
  return n.assignedSlot || n.parentNode || n.host || null;
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
  if (el.labels && Array.from(el.labels).some((l) => l === hit || deepContains(l, hit))) return true;
  for (let n = hit; n; n = flatParent(n)) {
    if (n.tagName === 'LABEL' && n.control === el) return true;
  }
  if (hit.shadowRoot && deepContains(hit, el)) return true;
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
  const field = el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && role(el) === 'textbox') || el.isContentEditable;
  if (!field) return false;
  for (let n = el.parentElement, hops = 0; n && hops < 2; n = n.parentElement, hops++) {
    const b = n.getBoundingClientRect();
    if ((b.width <= 1 || b.height <= 1) && getComputedStyle(n).overflow !== 'visible') return true;
  }
  return false;
}

function childrenOf(el) {
  const doc = frameDoc(el);
  if (doc) return doc.body ? [doc.body] : [];
  return kids(el).filter((n) => n.nodeType === Node.ELEMENT_NODE);
}

// A label that wraps its control: the control is listed with the label's text as
// its name, so the label itself is not.
function wrapsControl(el) {
  return el.tagName === 'LABEL' && el.control && deepContains(el, el.control);
}

function readPage() {
  const filter = a.filter === 'interactive' ? 'interactive' : 'all';
  const maxDepth = a.depth || 60;
  const maxLines = a.max_lines || 1500;
  const lines = [];
  let dropped = 0;
  let root = document.body || document.documentElement;
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
  const walk = (el, depth) => {
    if (depth > maxDepth || SKIP.has(el.tagName) || full()) return;
    if (!visible(el) && !isContents(el)) return;
    const r = role(el);
    const isInteractive = interactive(el, r);
    let emitted = false, ownLine = null;
    const wraps = wrapsControl(el);
    if (!wraps && (filter === 'interactive' ? isInteractive : (r || isInteractive))) {
      const d = describe(el, r);
      const doc = frameDoc(el);
      if (r === 'iframe' && !doc && !hopsTo(el)) d.note = 'another origin: its content is not read';
      if (emit(line(d, filter === 'interactive' ? 0 : depth))) ownLine = lines.length - 1;
      emitted = true;
    }
    if (emitted && (NAME_FROM_CONTENT.has(r) || el.tagName === 'SELECT')) return;
    const next = emitted ? depth + 1 : depth;
    const doc = frameDoc(el);
    if (doc) {
      if (doc.body) walk(doc.body, next);
      return;
    }
    if (isFrame(el)) {
      const hops = dropped ? null : hopsTo(el);
      if (hops) outer.push({ hops, ref: refOf(el), at: lines.length, line: ownLine, depth: filter === 'interactive' ? 0 : next });
      return;
    }
    if (filter === 'all') {
      for (const node of kids(el)) {
        if (node.nodeType === Node.TEXT_NODE) {
          if (wraps) continue;
          const text = squash(node.textContent);
          if (text) emit('  '.repeat(next) + '- text ' + JSON.stringify(cut(text, 300)));
        } else if (node.nodeType === Node.ELEMENT_NODE) {
          walk(node, next);
        }
      }
    } else {
      for (const child of childrenOf(el)) walk(child, next);
    }
  };
  walk(root, 0);
  let tree = lines.join('\n');
  if (dropped) {
    tree += '\n… ' + (dropped > 5000 ? 'more than 5000' : dropped) + ' more lines not shown; read a part with ref_id, or use find';
  }
  return {
    status: 'ok', url: location.href, title: document.title, tree,
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
  for (const node of el.childNodes) if (node.nodeType === Node.TEXT_NODE) text += ' ' + node.textContent;
  return squash(text);
}

// What an unnamed control sits in: the text of its row or list item (a todo
// list's checkbox next to its label), so "Walk the dog checkbox" finds it.
function context(el) {
  for (let n = flatParent(el), hops = 0; n && n.nodeType === Node.ELEMENT_NODE && hops < 4; n = flatParent(n), hops++) {
    const r = role(n);
    if (r === 'listitem' || r === 'row' || r === 'option' || r === 'treeitem' || n.tagName === 'LI' || n.tagName === 'TR') {
      return cut(textOf(n), MAX_NAME);
    }
  }
  // Else the heading that introduces its part of the page (a form under "Custom
  // SQL query" whose editor box has no label).
  for (let n = el, hops = 0; n && n.nodeType === Node.ELEMENT_NODE && hops < 6; n = flatParent(n), hops++) {
    let sib = n.previousElementSibling;
    for (let k = 0; sib && k < 3; sib = sib.previousElementSibling, k++) {
      if (role(sib) === 'heading' || sib.tagName === 'LEGEND') return cut(textOf(sib), MAX_NAME);
    }
  }
  return '';
}

function find(asked = a.query, limit = a.limit || 20) {
  const query = squash(asked).toLowerCase();
  const tokens = query.split(/[^\p{L}\p{N}_-]+/u).filter((t) => t && !STOP.has(t));
  if (!tokens.length) return { status: 'ok', matches: [], total: 0 };
  // The words that say what the element shows or is called; the rest name its kind.
  const content = tokens.filter((t) => ROLE_WORDS[t] === undefined);
  const scored = [];
  const all = allElements(document.body || document.documentElement);
  for (const el of all) {
    if (SKIP.has(el.tagName) || wrapsControl(el)) continue;
    const r = role(el);
    const isInteractive = interactive(el, r);
    const text = isInteractive || NAME_FROM_CONTENT.has(r) ? textOf(el).slice(0, 300) : ownText(el);
    if (!isInteractive && !r && !text) continue;
    const name = accName(el, r);
    let around = isInteractive && !name ? context(el) : '';
    const hay = [name, text, el.getAttribute('placeholder'), el.getAttribute('aria-label'), el.title, el.id,
      el.getAttribute('name'), el.getAttribute('type'), el.tagName === 'INPUT' ? el.value : '',
      isInteractive ? textOfIds(el, 'aria-describedby') : '', around]
      .filter(Boolean).join(' ').toLowerCase();
    const lname = (name || '').toLowerCase();
    let score = 0;
    let matched = 0;
    let textHits = 0;
    let roleHit = false;
    for (const t of tokens) {
      const roleWord = ROLE_WORDS[t] !== undefined;
      if (roleWord && r && ROLE_WORDS[t].includes(r)) {
        // "option", "button", "field": a word for the kind of element, met by its role.
        roleHit = true;
        score += 1.5;
        if (!content.length) matched++;
        continue;
      }
      const whole = new RegExp('(^|[^\\p{L}\\p{N}])' + t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '($|[^\\p{L}\\p{N}])', 'u').test(hay);
      if (roleWord) {
        // The same word in the text is a weak hint ("source-option" in a sentence).
        if (whole) score += 0.5;
        continue;
      }
      if (hay.includes(t)) {
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
        if (!hay.includes(t) && lctx.includes(t)) { matched++; score += 1; around = ctx; }
      }
    }
    if (!content.length && !roleHit) continue;
    if (!matched) continue;
    if (lname && lname.includes(query)) score += 3;
    // Something to act on, with a name, is what a description usually means; a
    // paragraph or a bare container that mentions the words is a weaker match.
    if (isInteractive) score += name ? 2 : 1;
    else if (!NAME_FROM_CONTENT.has(r) && r !== 'img') score -= 1;
    // Text that is nothing but the words asked for (a suggestion "JavaScript")
    // beats text that mentions them (a paragraph about JavaScript).
    const words = (name || text).toLowerCase().split(/[^\p{L}\p{N}_-]+/u).filter(Boolean);
    if (words.length && words.every((w) => tokens.includes(w))) score += 2;
    const pointer = !isInteractive && getComputedStyle(el).cursor === 'pointer';
    if (pointer) score += 1;
    // Long text means a container that merely includes the words.
    score -= Math.min(2, text.length / 400);
    if (!shown(el)) continue;
    scored.push({ el, r, score, complete: matched === (content.length || 1), textHits, text, around, pointer });
  }
  const complete = scored.filter((s) => s.complete);
  const pool = complete.length ? complete : scored.filter((s) => s.textHits > 0 || !content.length);
  pool.sort((x, y) => y.score - x.score);
  // Elements that fit equally well: a description names none of them for an
  // action, unless exactly one is on screen (the search box of a bar a page
  // repeats at its foot), which is the one a person looking at it means.
  const top = pool.length ? pool.filter((s) => s.score === pool[0].score).slice(0, 50) : [];
  let tied = top.length;
  if (tied > 1) {
    const vw = window.innerWidth, vh = window.innerHeight;
    const onScreen = top.filter((s) => {
      const b = s.el.getBoundingClientRect(), off = frameOffset(s.el);
      return b.right + off.x > 0 && b.bottom + off.y > 0 && b.left + off.x < vw && b.top + off.y < vh;
    });
    if (onScreen.length === 1) {
      pool.splice(pool.indexOf(onScreen[0]), 1);
      pool.unshift(onScreen[0]);
      tied = 1;
    }
  }
  const matches = pool.slice(0, limit).map((s) => {
    const d = describe(s.el, s.r);
    // An element without a name (a suggestion in a list of divs, say) is named by
    // the text that matched.
    if (!d.name && s.text) d.text = cut(s.text, MAX_NAME);
    if (s.around) d.context = s.around;
    if (s.pointer) d.clickable = true;
    const box = s.el.getBoundingClientRect();
    const off = frameOffset(s.el);
    d.box = [Math.round(box.left + off.x), Math.round(box.top + off.y), Math.round(box.width), Math.round(box.height)];
    if (hostFrame(s.el)) d.frame = describe(hostFrame(s.el), 'iframe').ref;
    return d;
  });
  return { status: 'ok', matches, total: pool.length, partial: !complete.length && pool.length > 0, tied,
    scores: pool.slice(0, limit).map((s) => s.score) };
}

// The element an action names: `a.ref`, or the best match for the description
// `a.find` when every word of it matched and no other element matched as well
// (an action on one of several equal candidates would be a guess).
function target() {
  if (typeof a.find !== 'string') return lookup(a.ref);
  const res = find(a.find, 5);
  if (!res.matches.length || res.partial) return { status: 'no-match', near: res.matches.slice(0, 3) };
  if (res.tied > 1) return { status: 'ambiguous', matches: res.matches.slice(0, Math.min(5, res.tied)) };
  return lookup(res.matches[0].ref);
}

function disabled(el) {
  if (el.matches && el.matches(':disabled')) return true;
  for (let n = el; n && n.nodeType === Node.ELEMENT_NODE; n = flatParent(n)) {
    if (n.getAttribute('aria-disabled') === 'true') return true;
  }
  return false;
}

// Whether a running animation moves `el` (one on it or on an element it renders
// inside): only then is its box compared across frames, so a still page pays nothing.
function animated(el) {
  const doc = el.ownerDocument;
  if (!doc.getAnimations) return false;
  const running = doc.getAnimations().filter((an) => an.playState === 'running' && an.effect && an.effect.target);
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
  const inView = () => {
    const off = frameOffset(el);
    const b = el.getBoundingClientRect();
    const fw = el.ownerDocument.defaultView.innerWidth, fh = el.ownerDocument.defaultView.innerHeight;
    return b.width > 0 && b.height > 0 && b.left >= 0 && b.top >= 0 && b.right <= fw && b.bottom <= fh &&
      b.left + off.x >= 0 && b.top + off.y >= 0 && b.right + off.x <= vw && b.bottom + off.y <= vh;
  };
  // Scroll only what is not fully in view: scrolling a visible element moves the
  // page under an agent that has just looked at it.
  if (!inView()) el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  if (animated(el)) {
    const b0 = el.getBoundingClientRect();
    await frame();
    const b1 = el.getBoundingClientRect();
    if (b0.left !== b1.left || b0.top !== b1.top || b0.width !== b1.width || b0.height !== b1.height) {
      return { status: 'moving', what };
    }
  }
  const off = frameOffset(el);
  const fw = el.ownerDocument.defaultView.innerWidth, fh = el.ownerDocument.defaultView.innerHeight;
  const rects = Array.from(el.getClientRects()).filter((b) => b.width > 0 && b.height > 0);
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

function setValue(el, v) {
  const win = el.ownerDocument.defaultView || window;
  const proto = el.tagName === 'TEXTAREA' ? win.HTMLTextAreaElement.prototype : win.HTMLInputElement.prototype;
  const setter = Object.getOwnPropertyDescriptor(proto, 'value').set;
  setter.call(el, v);
}

function fire(el, type) {
  const win = el.ownerDocument.defaultView || window;
  el.dispatchEvent(new win.Event(type, { bubbles: true }));
}

function formInput() {
  const found = target();
  if (found.status !== 'ok') return found;
  const el = found.el;
  const r = role(el);
  if (el.disabled) return { status: 'disabled', what: describe(el, r) };
  const v = a.value;
  const t = el.tagName;
  if (t === 'SELECT') {
    const wanted = Array.isArray(v) ? v.map(String) : [String(v)];
    const opts = Array.from(el.options);
    const pick = (w) => opts.find((o) => o.value === w) || opts.find((o) => squash(o.text) === squash(w)) ||
      opts.find((o) => squash(o.text).toLowerCase() === squash(w).toLowerCase());
    const chosen = wanted.map(pick);
    if (chosen.some((o) => !o)) {
      return { status: 'no-option', what: describe(el, r), options: opts.map((o) => squash(o.text)) };
    }
    if (el.multiple) opts.forEach((o) => { o.selected = chosen.includes(o); });
    else el.value = chosen[0].value;
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (t === 'INPUT') {
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (type === 'checkbox' || type === 'radio') {
      const want = v === true || v === 1 || ['true', 'on', 'yes', 'checked', '1'].includes(String(v).toLowerCase());
      if (el.checked !== want) {
        if (want || type === 'checkbox') el.click();
        else { el.checked = false; fire(el, 'input'); fire(el, 'change'); }
      }
      return { status: 'ok', what: describe(el, r) };
    }
    if (type === 'file') return { status: 'unsupported', what: describe(el, r) };
    el.focus();
    setValue(el, String(v));
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (t === 'TEXTAREA') {
    el.focus();
    setValue(el, String(v));
    fire(el, 'input'); fire(el, 'change');
    return { status: 'ok', what: describe(el, r) };
  }
  if (el.isContentEditable) {
    el.focus();
    el.textContent = String(v);
    fire(el, 'input');
    return { status: 'ok', what: describe(el, r) };
  }
  return { status: 'not-a-field', what: describe(el, r) };
}

function scrollTo() {
  const found = target();
  if (found.status !== 'ok') return found;
  found.el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  return { status: 'ok', what: describe(found.el, role(found.el)) };
}

function pageText() {
  const body = document.body || document.documentElement;
  return { status: 'ok', url: location.href, title: document.title, text: body ? body.innerText : '' };
}

function info() {
  return {
    status: 'ok', url: location.href, title: document.title, readyState: document.readyState,
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
        if (SKIP.has(e.tagName)) return false;
        if (a.by === 'role') return role(e) === want;
        if (a.by === 'aria_label') { const l = e.getAttribute('aria-label') || ''; return l !== '' && test(l); }
        const t = squash(ownText(e) || (e.shadowRoot || e.tagName === 'SLOT' ? flatText(e, 300) : ''));
        return t !== '' && test(t);
      });
    }
    el = candidates.find(shown) || null;
  }
  if (el) {
    out.found = true;
    const d = describe(el, role(el));
    out.match = { ref: d.ref, tag: el.tagName.toLowerCase(), role: d.role, text: cut(ownText(el) || textOf(el), 120) };
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
    status: 'ok', el, tag: el.tagName.toLowerCase(), type: (el.getAttribute('type') || '').toLowerCase(),
    multiple: !!el.multiple, disabled: !!el.disabled, what: describe(el, role(el)),
  };
}

// What a screenshot covers (screenshot.rs): the page's scrollable size, the
// viewport, the scroll and the device pixel ratio; with `a.ref` / `a.find`, also
// the element's box in top-document CSS pixels (its frames' offsets and the
// scroll added), after scrolling it into view when it was not fully in view,
// and the element itself when it is in the top document (for the driver's
// element screenshot; an element of a frame cannot cross into it).
function shot() {
  const root = document.documentElement, body = document.body;
  const out = {
    status: 'ok', dpr: window.devicePixelRatio || 1, view: [window.innerWidth, window.innerHeight],
    size: [Math.max(root.scrollWidth, body ? body.scrollWidth : 0), Math.max(root.scrollHeight, body ? body.scrollHeight : 0)],
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
    const r = el.getBoundingClientRect(), o = frameOffset(el);
    return r.top + o.y >= 0 && r.left + o.x >= 0 && r.bottom + o.y <= window.innerHeight && r.right + o.x <= window.innerWidth;
  };
  if (!inView()) el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
  const r = el.getBoundingClientRect(), o = frameOffset(el);
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
