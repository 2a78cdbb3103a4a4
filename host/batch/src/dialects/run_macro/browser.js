// The page side of desktop-touch's selector-based browser tools, run through
// the browser plugin's javascript_tool. Each entry takes one argument object
// and returns a JSON-safe value, or throws an Error whose message starts with
// a desktop-touch code ("ElementNotFound: ...") that run_macro reports as the
// step's code.
// The page may shadow what this library reads: a form's named control hides
// the form's own property (`<input name="tagName">` makes `form.tagName` an
// element), a named image hides the document's (`<img name="body">`), and a
// page can define its own `focus` or `getAttribute` on an element. So elements
// and the document are read and driven only through the prototypes' own
// accessors and methods, looked up once.
const $own = (C, k) => {
  for (let p = C && C.prototype; p; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, k);
    if (d) return d.get || d.value;
  }
  return null;
};
const $call = (f, self, ...args) => Reflect.apply(f, self, args);
const $ = {
  docQs: $own(Document, 'querySelector'), docQsa: $own(Document, 'querySelectorAll'), body: $own(Document, 'body'),
  title: $own(Document, 'title'), ready: $own(Document, 'readyState'), at: $own(Document, 'elementFromPoint'),
  byId: $own(Document, 'getElementById'), elQs: $own(Element, 'querySelector'), elQsa: $own(Element, 'querySelectorAll'),
  closest: $own(Element, 'closest'), attr: $own(Element, 'getAttribute'), hasAttr: $own(Element, 'hasAttribute'),
  tag: $own(Element, 'tagName'), id: $own(Element, 'id'), rect: $own(Element, 'getBoundingClientRect'),
  children: $own(Element, 'children'), outer: $own(Element, 'outerHTML'), scroll: $own(Element, 'scrollIntoView'),
  parent: $own(Node, 'parentElement'), childNodes: $own(Node, 'childNodes'), text: $own(Node, 'textContent'),
  setText: Object.getOwnPropertyDescriptor(Node.prototype, 'textContent').set, nodeType: $own(Node, 'nodeType'),
  contains: $own(Node, 'contains'), editable: $own(HTMLElement, 'isContentEditable'), focus: $own(HTMLElement, 'focus'),
  dispatch: $own(EventTarget, 'dispatchEvent'),
};
const tagOf = (el) => $call($.tag, el);
const attr = (el, k) => $call($.attr, el, k);
const hasAttr = (el, k) => $call($.hasAttr, el, k);
const idOf = (el) => $call($.id, el);
const parentOf = (el) => $call($.parent, el);
const boxOf = (el) => $call($.rect, el);
const textContentOf = (n) => $call($.text, n) || '';
const isDoc = (n) => $call($.nodeType, n) === 9;
const qs = (root, sel) => $call(isDoc(root) ? $.docQs : $.elQs, root, sel);
const qsa = (root, sel) => Array.from($call(isDoc(root) ? $.docQsa : $.elQsa, root, sel));
const bodyOf = () => $call($.body, document);
const editableOf = (el) => $call($.editable, el) === true;
const fail = (code, message) => { throw new Error(code + ': ' + message); };
const visible = (el) => {
  const s = getComputedStyle(el);
  if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
  const r = boxOf(el);
  return r.width > 0 && r.height > 0;
};
const inViewport = (r) => r.top < innerHeight && r.bottom > 0 && r.left < innerWidth && r.right > 0;
const own = (el) => Array.from($call($.childNodes, el)).filter((n) => $call($.nodeType, n) === 3)
  .map((n) => textContentOf(n)).join('').trim();
const textOf = (el) => {
  const t = textContentOf(el).trim().replace(/\s+/g, ' ').slice(0, 80);
  if (!t && (tagOf(el) === 'INPUT' || tagOf(el) === 'TEXTAREA')) {
    return (el.placeholder || el.value || attr(el, 'aria-label') || '').slice(0, 80);
  }
  return t;
};
const rectOf = (el) => {
  const r = boxOf(el);
  return { x: Math.round(r.left), y: Math.round(r.top), w: Math.round(r.width), h: Math.round(r.height) };
};
const selectorOf = (el) => {
  if (idOf(el)) return '#' + CSS.escape(idOf(el));
  const tag = tagOf(el).toLowerCase();
  for (const k of ['name', 'aria-label', 'data-testid']) {
    const v = attr(el, k);
    if (v && v.length < 80) return tag + '[' + k + '=' + JSON.stringify(v) + ']';
  }
  let node = el;
  let path = '';
  for (let depth = 0; depth < 4 && parentOf(node); depth++) {
    const parent = parentOf(node);
    const seg = tagOf(node).toLowerCase() + ':nth-child(' + (Array.from($call($.children, parent)).indexOf(node) + 1) + ')';
    path = path ? seg + ' > ' + path : seg;
    if (idOf(parent)) return '#' + CSS.escape(idOf(parent)) + ' > ' + path;
    if (parent === bodyOf()) return 'body > ' + path;
    node = parent;
  }
  return path || tag;
};
const roleOf = (el) => {
  const explicit = (attr(el, 'role') || '').trim().toLowerCase();
  if (explicit) return explicit;
  const tag = tagOf(el).toLowerCase();
  const type = (attr(el, 'type') || '').toLowerCase();
  if (tag === 'button' || (tag === 'input' && /^(button|submit|reset|image)$/.test(type))) return 'button';
  if (tag === 'a' && hasAttr(el, 'href')) return 'link';
  if (tag === 'input' && type === 'checkbox') return 'checkbox';
  if (tag === 'input' && type === 'radio') return 'radio';
  if (tag === 'textarea' || (tag === 'input' && !/^(hidden|range|color|file)$/.test(type))) return 'textbox';
  if (tag === 'select') return 'combobox';
  if (/^h[1-6]$/.test(tag)) return 'heading';
  if (tag === 'img') return 'img';
  return '';
};
const kindOf = (el) => {
  const tag = tagOf(el).toLowerCase();
  if (tag === 'a') return 'link';
  if (tag === 'button' || attr(el, 'role') === 'button') return 'button';
  if (tag === 'input' || tag === 'textarea' || tag === 'select') return 'input';
  if (/^h[1-6]$/.test(tag)) return 'heading';
  if (tag === 'p' || tag === 'span' || tag === 'div') return 'text';
  return 'other';
};
const rootOf = (scope) => {
  if (!scope) return document;
  let root = null;
  try { root = qs(document, scope); } catch (e) { fail('InvalidArgs', 'scope is not a CSS selector: ' + scope); }
  if (!root) fail('ScopeNotFound', 'the scope ' + JSON.stringify(scope) + ' matched nothing');
  return root;
};
const query = (root, selector) => {
  try { return qsa(root, selector); } catch (e) { return fail('InvalidArgs', 'not a CSS selector: ' + selector); }
};
// Elements matching {by, pattern} best first, each with its score.
const matches = (a) => {
  const root = rootOf(a.scope);
  const cs = !!a.caseSensitive;
  const out = [];
  if (a.by === 'selector') {
    for (const el of query(root, a.pattern)) out.push({ el, score: 1 });
    return out;
  }
  let re = null;
  if (a.by === 'regex') {
    try { re = new RegExp(a.pattern, cs ? '' : 'i'); } catch (e) { fail('InvalidArgs', 'not a regular expression: ' + a.pattern); }
  }
  const fold = (s) => (cs ? s : s.toLowerCase());
  const needle = fold(a.pattern);
  for (const el of qsa(root, '*')) {
    let score = 0;
    if (a.by === 'text') {
      const t = fold(own(el));
      if (t && t.includes(needle)) score = t === needle ? 1 : t.startsWith(needle) ? 0.9 : 0.7;
    } else if (a.by === 'regex') {
      const t = own(el);
      if (t && re.test(t)) score = 0.8;
    } else if (a.by === 'role') {
      if (roleOf(el) === a.pattern.trim().toLowerCase()) score = 1;
    } else if (a.by === 'ariaLabel') {
      const l = fold(attr(el, 'aria-label') || '');
      if (l && l.includes(needle)) score = l === needle ? 1 : 0.8;
    }
    if (score > 0) out.push({ el, score });
  }
  return out.sort((p, q) => q.score - p.score);
};
const clickable = (el) => {
  const tag = tagOf(el).toLowerCase();
  if (['a', 'button', 'input', 'select', 'textarea', 'summary', 'label', 'option'].includes(tag)) return true;
  if (/^(button|link|checkbox|radio|tab|menuitem|option|switch|treeitem)$/.test(attr(el, 'role') || '')) return true;
  if (hasAttr(el, 'onclick') || hasAttr(el, 'tabindex')) return true;
  return getComputedStyle(el).cursor === 'pointer';
};
const fillable = (el) => {
  const tag = tagOf(el).toLowerCase();
  if (tag === 'textarea') return true;
  if (tag === 'input') return !/^(button|submit|reset|checkbox|radio|range|color|file|image|hidden)$/.test((attr(el, 'type') || '').toLowerCase());
  return editableOf(el);
};
const describe = (el) => ({ selector: selectorOf(el), tag: tagOf(el).toLowerCase(), text: textOf(el) });
// The one element a click or fill means: by selector, or by axis climbing to
// the nearest ancestor that fits; more than one candidate is refused.
const resolve = (a, fits, tool) => {
  const roleFilter = a.role ? a.role.toLowerCase() : null;
  if (a.selector) {
    const el = query(document, a.selector)[0];
    if (!el) fail('ElementNotFound', tool + ': no element matches ' + JSON.stringify(a.selector));
    return el;
  }
  const picked = [];
  for (const { el } of matches(a)) {
    if (!visible(el)) continue;
    let node = el;
    for (let d = 0; node && d <= 3 && !fits(node); d++) node = parentOf(node);
    if (!node || !fits(node)) continue;
    if (roleFilter) {
      let hit = false;
      for (let n = node, d = 0; n && d <= 3 && !hit; d++, n = parentOf(n)) hit = roleOf(n) === roleFilter;
      if (!hit) continue;
    }
    if (!picked.includes(node)) picked.push(node);
  }
  if (picked.length === 0) {
    fail('BrowserNoActionableTarget', tool + ': nothing actionable matches ' + a.by + ' ' + JSON.stringify(a.pattern));
  }
  if (picked.length > 1) {
    fail('BrowserAmbiguousTarget', tool + ': ' + picked.length + ' elements match ' + a.by + ' ' + JSON.stringify(a.pattern) +
      ' (add role or scope, or use a selector): ' + JSON.stringify(picked.slice(0, 5).map(describe)));
  }
  return picked[0];
};
const page = () => ({ title: $call($.title, document), url: location.href, readyState: $call($.ready, document) });
const __dtm = {
  search(a) {
    let found = matches(a).filter(({ el }) => !a.visibleOnly || visible(el));
    if (a.inViewportOnly) found = found.filter(({ el }) => inViewport(boxOf(el)));
    if (found.length === 0) {
      fail('BrowserSearchNoResults', 'browser_search(' + a.by + ', ' + JSON.stringify(a.pattern) + ') returned 0 results');
    }
    const slice = found.slice(a.offset, a.offset + a.maxResults);
    const results = slice.map(({ el, score }) => ({
      type: kindOf(el),
      text: textOf(el),
      selector: selectorOf(el),
      role: attr(el, 'role') || undefined,
      ariaLabel: attr(el, 'aria-label') || undefined,
      matchedBy: a.by,
      confidence: visible(el) ? score : Math.max(0, score - 0.3),
      inViewport: inViewport(boxOf(el)),
      rect: rectOf(el),
    }));
    return { total: found.length, returned: results.length, truncated: found.length > a.offset + results.length, results, ...page() };
  },
  overview(a) {
    let root = document;
    // A scope that matches nothing falls back to the whole page, as there.
    if (a.scope) { try { root = qs(document, a.scope) || document; } catch (e) { root = document; } }
    const want = new Set(a.types.includes('all') ? ['link', 'button', 'input'] : a.types);
    const sel = 'a[href], button, input, select, textarea, [role=button], [role=link], [role=checkbox], [role=radio], ' +
      '[role=tab], [role=menuitem], [role=switch], [role=combobox], [role=textbox], [contenteditable=true]';
    const elements = [];
    let total = 0;
    for (const el of qsa(root, sel)) {
      const role = roleOf(el);
      const type = role === 'link' ? 'link' : /^(textbox|combobox|checkbox|radio|switch)$/.test(role) ? 'input' : 'button';
      if (!want.has(type) || !visible(el)) continue;
      const r = boxOf(el);
      if (a.inViewportOnly && !inViewport(r)) continue;
      total++;
      if (elements.length >= a.maxResults) continue;
      const item = { type, text: textOf(el), selector: selectorOf(el), inViewport: inViewport(r), rect: rectOf(el) };
      if (role) item.role = role;
      if ('value' in el && type === 'input' && typeof el.value === 'string') item.value = el.value.slice(0, 200);
      for (const s of ['checked', 'pressed', 'selected', 'expanded']) {
        const v = attr(el, 'aria-' + s) ?? (s === 'checked' && 'checked' in el && /^(checkbox|radio)$/.test(el.type) ? String(el.checked) : null);
        if (v !== null) item[s] = v === 'true';
      }
      if (el.disabled) item.disabled = true;
      elements.push(item);
    }
    return { count: elements.length, total, truncated: total > elements.length, elements, ...page() };
  },
  locate(a) {
    const el = query(document, a.selector)[0];
    if (!el) fail('ElementNotFound', 'browser_locate: no element matches ' + JSON.stringify(a.selector));
    const r = boxOf(el);
    const chromeX = Math.max(0, (outerWidth - innerWidth) / 2);
    const chromeY = Math.max(0, outerHeight - innerHeight - chromeX);
    const cx = r.left + r.width / 2;
    const cy = r.top + r.height / 2;
    return {
      selector: a.selector,
      inViewport: inViewport(r),
      viewport: { x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height), centerX: Math.round(cx), centerY: Math.round(cy) },
      // Screen pixels as a desktop click needs them (the window's position plus its chrome).
      screen: { x: Math.round((screenX + chromeX + cx) * devicePixelRatio), y: Math.round((screenY + chromeY + cy) * devicePixelRatio) },
      ...page(),
    };
  },
  aim(a) {
    const el = resolve(a, clickable, 'browser_click');
    let r = boxOf(el);
    if (!inViewport(r)) {
      if (!a.scrollIntoView) {
        fail('ElementNotInViewport', 'browser_click: ' + selectorOf(el) + ' is outside the viewport; pass scrollIntoView: true or scroll first');
      }
      $call($.scroll, el, { block: 'center', inline: 'center' });
      r = boxOf(el);
    }
    const x = Math.min(Math.max(0, Math.round(r.left + r.width / 2)), innerWidth - 1);
    const y = Math.min(Math.max(0, Math.round(r.top + r.height / 2)), innerHeight - 1);
    const hit = $call($.at, document, x, y);
    if (hit && hit !== el && !$call($.contains, el, hit) && !$call($.contains, hit, el)) {
      fail('BrowserModalBlocking', 'browser_click: ' + selectorOf(el) + ' is covered by ' + JSON.stringify(describe(hit)) + '; nothing was clicked');
    }
    return [x, y];
  },
  // Sets the field as the page's own input would, lets the page answer (a
  // framework renders on the next frame, a controlled field puts its value
  // back), then reads the field again: a value the page did not keep fails
  // instead of passing.
  async fill(a) {
    const el = resolve(a, fillable, 'browser_fill');
    if (!fillable(el)) fail('BrowserNoActionableTarget', 'browser_fill: ' + selectorOf(el) + ' is not a text field');
    if (el.disabled || el.readOnly || attr(el, 'aria-readonly') === 'true') {
      fail('BrowserNoActionableTarget', 'browser_fill: ' + selectorOf(el) + ' is ' + (el.disabled ? 'disabled' : 'read-only') +
        ' (the page sets it itself); nothing was changed');
    }
    const field = !(editableOf(el) && !('value' in el));
    const proto = tagOf(el) === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    const read = () => (field ? Object.getOwnPropertyDescriptor(proto, 'value').get.call(el) : textContentOf(el));
    $call($.focus, el);
    if (!field) {
      $call($.setText, el, a.value);
    } else {
      // The prototype's setter, so frameworks that track the value see the change.
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, a.value);
    }
    $call($.dispatch, el, new Event('input', { bubbles: true }));
    $call($.dispatch, el, new Event('change', { bubbles: true }));
    await new Promise((done) => {
      const late = setTimeout(done, 300);
      requestAnimationFrame(() => setTimeout(() => { clearTimeout(late); done(); }, 50));
    });
    const now = read();
    const asked = String(a.value);
    const plain = (s) => String(s).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
    const kept = now === asked || now.trim() === asked.trim() ||
      (asked.trim() !== '' && Number.isFinite(Number(asked)) && Number(now) === Number(asked)) ||
      (plain(asked) !== '' && plain(now) === plain(asked)) ||
      (el.maxLength > 0 && now.length >= el.maxLength && asked.startsWith(now));
    if (!kept) {
      fail('BrowserValueNotKept', 'browser_fill: ' + selectorOf(el) + ' was set to ' + JSON.stringify(asked) +
        ' and the page changed it back: it holds ' + JSON.stringify(now.slice(0, 200)));
    }
    return { ok: true, selector: selectorOf(el), value: now, ...page() };
  },
  form(a) {
    const root = query(document, a.selector)[0];
    if (!root) fail('ElementNotFound', 'browser_form: no element matches ' + JSON.stringify(a.selector));
    const labelOf = (el) => {
      if (idOf(el)) { const l = qs(document, 'label[for=' + JSON.stringify(idOf(el)) + ']'); if (l) return textContentOf(l).trim(); }
      const up = $call($.closest, el, 'label');
      if (up) return textContentOf(up).trim();
      const by = attr(el, 'aria-labelledby');
      if (by) { const l = $call($.byId, document, by); if (l) return textContentOf(l).trim(); }
      return attr(el, 'aria-label') || '';
    };
    const fields = [];
    let total = 0;
    for (const el of qsa(root, 'input, select, textarea, button')) {
      if (!a.includeHidden && el.type === 'hidden') continue;
      total++;
      if (fields.length >= a.maxResults) continue;
      fields.push({
        tag: tagOf(el).toLowerCase(), type: el.type || '', name: el.name || '', id: idOf(el) || '',
        value: typeof el.value === 'string' ? el.value.slice(0, 200) : '',
        placeholder: el.placeholder || '', label: labelOf(el).slice(0, 200),
        disabled: !!el.disabled, readOnly: !!el.readOnly, selector: selectorOf(el),
      });
    }
    return { count: fields.length, total, truncated: total > fields.length, fields, ...page() };
  },
  dom(a) {
    const el = a.selector ? query(document, a.selector)[0] : bodyOf();
    if (!el) fail('ElementNotFound', 'browser_eval dom: no element matches ' + JSON.stringify(a.selector));
    const html = $call($.outer, el);
    return html.length > a.maxLength ? html.slice(0, a.maxLength) + '\n<!-- truncated: ' + html.length + ' characters -->' : html;
  },
  appState(a) {
    const probes = a.selectors || ['script#__NEXT_DATA__', 'script#__NUXT_DATA__', 'window:__NUXT__', 'window:__remixContext',
      'window:__APOLLO_STATE__', 'window:__INITIAL_STATE__', 'window:__PRELOADED_STATE__',
      'script[data-target="react-app.embeddedData"]', 'script[type="application/ld+json"]', 'script[type="application/json"]'];
    const hits = [];
    for (const probe of probes) {
      let payload;
      if (probe.startsWith('window:')) {
        payload = window[probe.slice(7)];
        if (payload === undefined) continue;
      } else {
        const el = query(document, probe)[0];
        if (!el) continue;
        try { payload = JSON.parse(textContentOf(el)); } catch (e) { payload = textContentOf(el); }
      }
      let text;
      try { text = JSON.stringify(payload); } catch (e) { text = String(payload); }
      if (text === undefined) continue;
      const truncated = text.length > a.maxBytes;
      hits.push({ selector: probe, sizeBytes: text.length, truncated, payload: truncated ? text.slice(0, a.maxBytes) : payload });
    }
    return { found: hits.length, hits, ...page() };
  },
  scrollTo(a) {
    const el = query(document, a.selector)[0];
    if (!el) fail('ElementNotFound', 'scroll: no element matches ' + JSON.stringify(a.selector));
    $call($.scroll, el, { block: a.block, inline: 'nearest' });
    return { ok: true, selector: a.selector, inViewport: inViewport(boxOf(el)) };
  },
};
