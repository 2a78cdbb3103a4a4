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
      if (!e.hashChange && !(e.destination && e.destination.sameDocument)) mark();
    });
  }
  window.addEventListener('submit', (e) => { if (!e.defaultPrevented) mark(); });
  window.addEventListener('click', (e) => {
    const a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    if (a && !e.defaultPrevented && !a.getAttribute('href').startsWith('#') && a.target !== '_blank') mark();
  });
  window.addEventListener('beforeunload', mark);
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

function textOf(el) {
  return squash(el.innerText !== undefined ? el.innerText : el.textContent);
}

function accName(el, r) {
  const by = el.getAttribute('aria-labelledby');
  if (by) {
    const text = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean).map(textOf).join(' ');
    if (squash(text)) return cut(text, MAX_NAME);
  }
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
  return s;
}

// Every element under `root`, open shadow roots included (closed ones are
// unreachable by design), in document order with each shadow tree after its host.
function allElements(root) {
  const out = [];
  const visit = (node) => {
    for (const el of node.querySelectorAll('*')) {
      out.push(el);
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(root);
  return out;
}

// What is really under (x, y): elementFromPoint stops at a shadow host, so ask
// each open shadow root in turn.
function deepHit(x, y) {
  let hit = document.elementFromPoint(x, y);
  while (hit && hit.shadowRoot) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return hit;
}

// `outer` contains `inner`, looking through shadow boundaries.
function deepContains(outer, inner) {
  for (let n = inner; n; n = n.parentNode || n.host) {
    if (n === outer) return true;
  }
  return false;
}

function childrenOf(el) {
  return el.shadowRoot ? Array.from(el.shadowRoot.children) : Array.from(el.children);
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
  const emit = (text) => {
    if (lines.length < maxLines) lines.push(text); else dropped++;
  };
  const walk = (el, depth) => {
    if (depth > maxDepth || SKIP.has(el.tagName)) return;
    if (!visible(el) && !isContents(el)) return;
    const r = role(el);
    const isInteractive = interactive(el, r);
    let emitted = false;
    if (filter === 'interactive' ? isInteractive : (r || isInteractive)) {
      emit(line(describe(el, r), filter === 'interactive' ? 0 : depth));
      emitted = true;
    }
    if (emitted && (NAME_FROM_CONTENT.has(r) || el.tagName === 'SELECT')) return;
    if (r === 'iframe') return;
    const next = emitted ? depth + 1 : depth;
    if (filter === 'all') {
      const nodes = el.shadowRoot ? el.shadowRoot.childNodes : el.childNodes;
      for (const node of nodes) {
        if (node.nodeType === Node.TEXT_NODE) {
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
    tree += '\n… ' + dropped + ' more lines not shown; read a part with ref_id, or use find';
  }
  return {
    status: 'ok', url: location.href, title: document.title, tree,
    viewport: { width: window.innerWidth, height: window.innerHeight },
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
  cell: ['cell'], table: ['table'], form: ['form'], dialog: ['dialog'],
};
const STOP = new Set(['the', 'a', 'an', 'of', 'to', 'in', 'on', 'for', 'with', 'and', 'or', 'that', 'this', 'is',
  'element', 'elements', 'thing', 'area', 'at', 'by', 'labelled', 'labeled', 'named', 'called', 'which', 'where']);

function ownText(el) {
  let text = '';
  for (const node of el.childNodes) if (node.nodeType === Node.TEXT_NODE) text += ' ' + node.textContent;
  return squash(text);
}

function find() {
  const query = squash(a.query).toLowerCase();
  const tokens = query.split(/[^\p{L}\p{N}_-]+/u).filter((t) => t && !STOP.has(t));
  const limit = a.limit || 20;
  if (!tokens.length) return { status: 'ok', matches: [], total: 0 };
  const scored = [];
  const all = allElements(document.body || document.documentElement);
  for (const el of all) {
    if (SKIP.has(el.tagName)) continue;
    const r = role(el);
    const isInteractive = interactive(el, r);
    const text = isInteractive || NAME_FROM_CONTENT.has(r) ? textOf(el).slice(0, 300) : ownText(el);
    if (!isInteractive && !r && !text) continue;
    const name = accName(el, r);
    const hay = [name, text, el.getAttribute('placeholder'), el.getAttribute('aria-label'), el.title, el.id,
      el.getAttribute('name'), el.getAttribute('type'), el.tagName === 'INPUT' ? el.value : '']
      .filter(Boolean).join(' ').toLowerCase();
    let score = 0;
    let matched = 0;
    let textHits = 0;
    for (const t of tokens) {
      if (hay.includes(t)) {
        matched++; textHits++;
        score += new RegExp('(^|[^\\p{L}\\p{N}])' + t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '($|[^\\p{L}\\p{N}])', 'u').test(hay) ? 3 : 2;
      } else if (r && (ROLE_WORDS[t] || []).includes(r)) {
        matched++;
        score += 1.5;
      }
    }
    if (!matched) continue;
    if (name && name.toLowerCase().includes(query)) score += 3;
    if (isInteractive) score += 1;
    // Long text means a container that merely includes the words.
    score -= Math.min(2, text.length / 400);
    if (!visible(el)) continue;
    scored.push({ el, r, score, complete: matched === tokens.length, textHits });
  }
  const complete = scored.filter((s) => s.complete);
  const pool = complete.length ? complete : scored.filter((s) => s.textHits > 0);
  pool.sort((x, y) => y.score - x.score);
  const matches = pool.slice(0, limit).map((s) => {
    const d = describe(s.el, s.r);
    const box = s.el.getBoundingClientRect();
    d.box = [Math.round(box.left), Math.round(box.top), Math.round(box.width), Math.round(box.height)];
    return d;
  });
  return { status: 'ok', matches, total: pool.length, partial: !complete.length && pool.length > 0 };
}

function point() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return { status: found.status };
  const el = found.el;
  if (!visible(el)) return { status: 'hidden', what: describe(el, role(el)) };
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const vw = window.innerWidth, vh = window.innerHeight;
  const rects = Array.from(el.getClientRects()).filter((b) => b.width > 0 && b.height > 0);
  const box = rects.find((b) => b.right > 0 && b.bottom > 0 && b.left < vw && b.top < vh) || rects[0];
  if (!box) return { status: 'hidden', what: describe(el, role(el)) };
  const left = Math.max(box.left, 0), right = Math.min(box.right, vw);
  const top = Math.max(box.top, 0), bottom = Math.min(box.bottom, vh);
  if (right <= left || bottom <= top) return { status: 'offscreen', what: describe(el, role(el)) };
  const x = Math.floor((left + right) / 2), y = Math.floor((top + bottom) / 2);
  const hit = deepHit(x, y);
  const ok = hit && (hit === el || deepContains(el, hit) || (hit.control && hit.control === el) ||
    (el.labels && Array.from(el.labels).includes(hit)) || (el.control && el.control === hit));
  if (!ok) {
    const by = hit ? describe(hit, role(hit)) : null;
    return { status: 'covered', x, y, by, what: describe(el, role(el)) };
  }
  return { status: 'ok', x, y, what: describe(el, role(el)) };
}

function setValue(el, v) {
  const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const setter = Object.getOwnPropertyDescriptor(proto, 'value').set;
  setter.call(el, v);
}

function fire(el, type) {
  el.dispatchEvent(new Event(type, { bubbles: true }));
}

function formInput() {
  const found = lookup(a.ref);
  if (found.status !== 'ok') return { status: found.status };
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
  const found = lookup(a.ref);
  if (found.status !== 'ok') return { status: found.status };
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

let result;
switch (op) {
  case 'read_page': result = readPage(); break;
  case 'find': result = find(); break;
  case 'point': result = point(); break;
  case 'form_input': result = formInput(); break;
  case 'scroll_to': result = scrollTo(); break;
  case 'text': result = pageText(); break;
  case 'info': result = info(); break;
  default: result = { status: 'bad-op' };
}
result.next = reg.next;
return result;
