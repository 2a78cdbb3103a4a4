// Accessible names and roles as the browser computes them: W3C accname 1.2
// (steps 2A-2I) with the HTML mapping of html-aam, and the implicit ARIA roles
// of html-aam. Prepended to page.js (page.rs); everything lives in ACC so no
// name collides with the library's own.
//
// It runs inside pages the tool does not control: a form holding
// <input name="title"> makes `form.title` an element, and a page may replace
// Array.prototype.map or String.prototype.trim. So DOM state is read through
// the prototype getters and methods captured here, never through properties
// of the element, and strings are built with captured functions only.
const ACC = (() => {
  'use strict';
  // Built lazily, on the first name asked: by then the page library has put
  // back the built-ins the page replaced (page.js 'builtins'), and these
  // captures take those.
  let impl = null;
  const make = () => {
  const O = Object, R = Reflect, Str = String;
  const apply = R.apply;
  const getDesc = O.getOwnPropertyDescriptor;
  const getter = (proto, name) => {
    for (let p = proto; p; p = O.getPrototypeOf(p)) {
      const d = getDesc(p, name);
      if (d) return d.get || null;
    }
    return null;
  };
  const method = (proto, name) => {
    for (let p = proto; p; p = O.getPrototypeOf(p)) {
      const d = getDesc(p, name);
      if (d) return d.value || null;
    }
    return null;
  };
  const W = window;
  const E = W.Element.prototype, N = W.Node.prototype, H = W.HTMLElement.prototype;
  const g = {
    nodeType: getter(N, 'nodeType'), firstChild: getter(N, 'firstChild'), nextSibling: getter(N, 'nextSibling'),
    parentNode: getter(N, 'parentNode'), data: getter(W.CharacterData.prototype, 'data'),
    localName: getter(E, 'localName'), namespaceURI: getter(E, 'namespaceURI'), shadowRoot: getter(E, 'shadowRoot'),
    host: getter(W.ShadowRoot.prototype, 'host'), isContentEditable: getter(H, 'isContentEditable'),
    inputValue: getter(W.HTMLInputElement.prototype, 'value'), textareaValue: getter(W.HTMLTextAreaElement.prototype, 'value'),
    selectOptions: getter(W.HTMLSelectElement.prototype, 'options'), optionSelected: getter(W.HTMLOptionElement.prototype, 'selected'),
    collLength: getter(W.HTMLCollection.prototype, 'length'), listLength: getter(W.NodeList.prototype, 'length'),
  };
  const labelsGetter = {};
  const LABELABLE = ['input', 'HTMLInputElement', 'select', 'HTMLSelectElement', 'textarea', 'HTMLTextAreaElement',
    'button', 'HTMLButtonElement', 'output', 'HTMLOutputElement', 'meter', 'HTMLMeterElement', 'progress', 'HTMLProgressElement'];
  for (let i = 0; i < LABELABLE.length; i += 2) {
    const ctor = W[LABELABLE[i + 1]];
    if (ctor) labelsGetter[LABELABLE[i]] = getter(ctor.prototype, 'labels');
  }
  const m = {
    getAttribute: method(E, 'getAttribute'), hasAttribute: method(E, 'hasAttribute'), getRootNode: method(N, 'getRootNode'),
    docById: method(W.Document.prototype, 'getElementById'), fragById: method(W.DocumentFragment.prototype, 'getElementById'),
    assignedNodes: W.HTMLSlotElement ? method(W.HTMLSlotElement.prototype, 'assignedNodes') : null,
    item: method(W.NodeList.prototype, 'item'), collItem: method(W.HTMLCollection.prototype, 'item'),
    getPropertyValue: method(W.CSSStyleDeclaration.prototype, 'getPropertyValue'),
    replace: Str.prototype.replace, trim: Str.prototype.trim, split: Str.prototype.split, slice: Str.prototype.slice,
    toLowerCase: Str.prototype.toLowerCase, has: Set.prototype.has, add: Set.prototype.add, exec: RegExp.prototype.exec,
  };
  const gcs = W.getComputedStyle;
  const MAX = 150;
  // Raw text gathered past this is cut anyway; a page of megabytes of text
  // inside one link costs no more than this.
  const MAX_RAW = 4000;
  // Nodes one name may visit: a huge DOM under a landmark costs a bounded walk.
  const MAX_NODES = 20000;
  const MAX_DEPTH = 200;

  // A getter read on a node it does not apply to (an HTML one on an SVG
  // element) is undefined, not an end to the whole name.
  const get = (fn, o) => {
    if (!fn) return undefined;
    try { return apply(fn, o, []); } catch (e) { return undefined; }
  };
  const call = (fn, o, ...args) => apply(fn, o, args);
  const S = (v) => (v === null || v === undefined ? '' : Str(v));
  const lower = (s) => call(m.toLowerCase, S(s));
  const trim = (s) => call(m.trim, S(s));
  const WS = /[\s\u200b]+/g;
  // accname's whitespace: runs collapse to one space; soft hyphens and zero-width
  // spaces do not show.
  const squash = (s) => trim(call(m.replace, call(m.replace, S(s), /[\u00ad\u200b]/g, ''), WS, ' '));
  const cut = (s) => {
    s = squash(s);
    return s.length > MAX ? call(m.slice, s, 0, MAX - 1) + '…' : s;
  };
  const tokens = (s) => {
    const out = [];
    const t = trim(s);
    if (!t) return out;
    const parts = call(m.split, t, /\s+/);
    for (let i = 0; i < parts.length; i++) out[out.length] = parts[i];
    return out;
  };

  const ELEMENT = 1, TEXT = 3;
  const type = (n) => get(g.nodeType, n);
  const tag = (el) => lower(get(g.localName, el));
  const isHTML = (el) => get(g.namespaceURI, el) === 'http://www.w3.org/1999/xhtml';
  const isSVG = (el) => get(g.namespaceURI, el) === 'http://www.w3.org/2000/svg';
  const editableOf = (el) => isHTML(el) && get(g.isContentEditable, el) === true;
  const attr = (el, n) => call(m.getAttribute, el, n);
  const has = (el, n) => call(m.hasAttribute, el, n);
  const style = (el, pseudo) => {
    try { return apply(gcs, W, pseudo ? [el, pseudo] : [el]); } catch (e) { return null; }
  };
  const prop = (st, name) => (st ? S(call(m.getPropertyValue, st, name)) : '');
  const parentOf = (n) => {
    const p = get(g.parentNode, n);
    // A shadow root's parent in the composed tree is its host (a fragment
    // that is no shadow root has none).
    if (p && type(p) === 11) { try { return get(g.host, p) || null; } catch (e) { return null; } }
    return p;
  };
  const inputType = (el) => {
    const t = lower(trim(attr(el, 'type')));
    return t || 'text';
  };
  const inSet = (set, v) => call(m.has, set, v);

  // --- children in the composed tree: a slot shows what is assigned to it, a
  // shadow host its shadow tree ----------------------------------------------------
  const children = (el) => {
    const out = [];
    if (type(el) === ELEMENT && tag(el) === 'slot' && m.assignedNodes) {
      const assigned = call(m.assignedNodes, el, { flatten: true });
      // An array, whose length is its own property.
      const n = assigned ? assigned.length : 0;
      for (let i = 0; i < n; i++) out[out.length] = assigned[i];
      if (out.length) return out;
    }
    const sr = type(el) === ELEMENT ? get(g.shadowRoot, el) : null;
    for (let c = get(g.firstChild, sr || el); c; c = get(g.nextSibling, c)) out[out.length] = c;
    return out;
  };

  // --- hidden (accname 2A) ----------------------------------------------------------
  // Hidden counting its ancestors: display:none anywhere above, or aria-hidden.
  const hiddenDeep = (el) => {
    let depth = 0;
    for (let n = el; n && type(n) === ELEMENT && depth < MAX_DEPTH; n = parentOf(n), depth++) {
      if (lower(attr(n, 'aria-hidden')) === 'true') return true;
      const st = style(n);
      if (!st) continue;
      if (prop(st, 'display') === 'none') return true;
      if (n === el) {
        const v = prop(st, 'visibility');
        if (v === 'hidden' || v === 'collapse') return true;
      }
    }
    return false;
  };

  // --- roles ------------------------------------------------------------------------
  const ARIA_ROLES = new Set(('alert alertdialog application article banner blockquote button caption cell checkbox code ' +
    'columnheader combobox comment complementary contentinfo definition deletion dialog directory document emphasis feed ' +
    'figure form generic grid gridcell group heading img image insertion link list listbox listitem log main mark marquee math ' +
    'menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option paragraph presentation ' +
    'progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox sectionfooter sectionheader ' +
    'separator slider spinbutton status strong subscript suggestion superscript switch tab table tablist tabpanel term ' +
    'textbox time timer toolbar tooltip tree treegrid treeitem').split(' '));
  // Global ARIA attributes: an element carrying one keeps its own role even if
  // it says role=none (ARIA's presentational role conflict resolution).
  const GLOBAL_ARIA = ['aria-atomic', 'aria-braillelabel', 'aria-brailleroledescription', 'aria-busy', 'aria-controls',
    'aria-current', 'aria-describedby', 'aria-description', 'aria-details', 'aria-dropeffect', 'aria-flowto', 'aria-grabbed',
    'aria-haspopup', 'aria-keyshortcuts', 'aria-label', 'aria-labelledby', 'aria-live', 'aria-owns', 'aria-relevant',
    'aria-roledescription'];

  const focusable = (el) => {
    const t = tag(el);
    if (has(el, 'tabindex')) return true;
    if ((t === 'a' || t === 'area') && has(el, 'href')) return true;
    if (t === 'button' || t === 'select' || t === 'textarea' || t === 'iframe' || t === 'summary') return !has(el, 'disabled');
    if (t === 'input') return inputType(el) !== 'hidden' && !has(el, 'disabled');
    return editableOf(el);
  };

  const closestTag = (el, tags, stopAt) => {
    let depth = 0;
    for (let n = parentOf(el); n && type(n) === ELEMENT && depth < MAX_DEPTH; n = parentOf(n), depth++) {
      const t = tag(n);
      if (stopAt && inSet(stopAt, t)) return null;
      if (inSet(tags, t)) return n;
      const r = lower(trim(attr(n, 'role')));
      if (r && inSet(tags, 'role:' + r)) return n;
    }
    return null;
  };
  const SECTIONING = new Set(['article', 'aside', 'main', 'nav', 'section',
    'role:article', 'role:complementary', 'role:main', 'role:navigation', 'role:region']);
  const TABLEISH = new Set(['table', 'role:grid', 'role:treegrid', 'role:table']);

  // A name given by the author (aria-labelledby, aria-label, title): what a
  // <section> or <form> needs to become a landmark.
  const authorNamed = (el) => {
    if (trim(attr(el, 'aria-label'))) return true;
    if (trim(attr(el, 'title'))) return true;
    return !!(trim(attr(el, 'aria-labelledby')) && squash(labelledBy(el, newCtx(el))));
  };

  const tableRole = (el) => {
    const table = closestTag(el, TABLEISH);
    if (!table) return '';
    const r = lower(trim(attr(table, 'role')));
    return r === 'grid' || r === 'treegrid' ? 'grid' : 'table';
  };

  const thRole = (el) => {
    const scope = lower(trim(attr(el, 'scope')));
    if (scope === 'row' || scope === 'rowgroup') return 'rowheader';
    if (scope === 'col' || scope === 'colgroup') return 'columnheader';
    // Without scope: a header in a row whose other cells are data is a row header.
    const row = parentOf(el);
    if (row && type(row) === ELEMENT && tag(row) === 'tr') {
      const cells = children(row);
      for (let i = 0; i < cells.length; i++) if (type(cells[i]) === ELEMENT && tag(cells[i]) === 'td') return 'rowheader';
    }
    return 'columnheader';
  };

  function implicitRole(el) {
    if (!isHTML(el)) {
      // Chromium: an <svg> with a name is an image, one without is left out.
      if (isSVG(el) && tag(el) === 'svg') return authorNamed(el) || firstChildTag(el, 'title') ? 'img' : 'none';
      if (tag(el) === 'math' && get(g.namespaceURI, el) === 'http://www.w3.org/1998/Math/MathML') return 'math';
      if (isSVG(el) && tag(el) === 'a' && (has(el, 'href') || has(el, 'xlink:href'))) return 'link';
      return '';
    }
    const t = tag(el);
    switch (t) {
      case 'a': case 'area': return has(el, 'href') ? 'link' : 'generic';
      case 'article': return 'article';
      case 'aside': return closestTag(el, SECTIONING) && !authorNamed(el) ? 'generic' : 'complementary';
      case 'b': case 'bdi': case 'bdo': case 'data': case 'div': case 'i': case 'pre': case 'q': case 'samp': case 'small':
      case 'span': case 'u': case 'hgroup':
        return t === 'hgroup' ? 'group' : 'generic';
      case 'address': return 'group';
      case 'blockquote': return 'blockquote';
      case 'body': return 'generic';
      case 'button': return 'button';
      case 'caption': return 'caption';
      case 'code': return 'code';
      case 'datalist': return 'listbox';
      case 'del': case 's': return 'deletion';
      case 'ins': return 'insertion';
      case 'details': return 'group';
      case 'dfn': return 'term';
      case 'dialog': return 'dialog';
      case 'em': return 'emphasis';
      case 'fieldset': return 'group';
      case 'figure': return 'figure';
      // Inside a sectioning element they head or close only that part (ARIA 1.3).
      case 'footer': return closestTag(el, SECTIONING) ? 'sectionfooter' : 'contentinfo';
      case 'header': return closestTag(el, SECTIONING) ? 'sectionheader' : 'banner';
      // html-aam wants a name first; Chromium exposes every form.
      case 'form': return 'form';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'hr': return 'separator';
      case 'html': return 'document';
      case 'img': {
        const alt = attr(el, 'alt');
        if (alt === '' && !authorNamed(el)) return 'presentation';
        return 'img';
      }
      case 'input': {
        const ty = inputType(el);
        const list = has(el, 'list');
        switch (ty) {
          case 'hidden': return '';
          case 'button': case 'image': case 'reset': case 'submit': case 'file': return 'button';
          case 'checkbox': return 'checkbox';
          case 'radio': return 'radio';
          case 'range': return 'slider';
          case 'number': return 'spinbutton';
          case 'search': return list ? 'combobox' : 'searchbox';
          case 'email': case 'tel': case 'text': case 'url': return list ? 'combobox' : 'textbox';
          case 'color': case 'date': case 'datetime-local': case 'month': case 'password': case 'time':
          case 'week': return ty === 'password' ? 'textbox' : '';
          default: return list ? 'combobox' : 'textbox';
        }
      }
      case 'li': return 'listitem';
      case 'main': return 'main';
      case 'mark': return 'mark';
      case 'math': return 'math';
      case 'menu': case 'ol': case 'ul': return 'list';
      case 'meter': return 'meter';
      case 'nav': return 'navigation';
      case 'optgroup': return 'group';
      case 'option': return 'option';
      case 'output': return 'status';
      case 'p': return 'paragraph';
      case 'progress': return 'progressbar';
      case 'search': return 'search';
      case 'section': return authorNamed(el) ? 'region' : 'generic';
      case 'select': {
        const multiple = has(el, 'multiple');
        const size = parseInt(S(attr(el, 'size')), 10);
        return multiple || size > 1 ? 'listbox' : 'combobox';
      }
      case 'strong': return 'strong';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'summary': return 'button';
      case 'table': return 'table';
      case 'tbody': case 'thead': case 'tfoot': return 'rowgroup';
      case 'td': {
        const tr = tableRole(el);
        return tr === 'grid' ? 'gridcell' : tr === 'table' ? 'cell' : '';
      }
      case 'th': {
        const tr = tableRole(el);
        const h = thRole(el);
        return tr ? h : '';
      }
      case 'tr': return 'row';
      case 'textarea': return 'textbox';
      case 'time': return 'time';
      case 'dd': return 'definition';
      case 'dt': return 'term';
      case 'dl': return '';
      case 'figcaption': case 'legend': case 'label': return '';
      case 'iframe': return '';
    }
    return '';
  }

  // The root of an editable region takes typing like a text box (Chromium
  // computes 'generic' for an editable div, with an editable state; ARIA has no
  // role for it): a text box where the tag gives no role of its own.
  function implicitOrEditable(el) {
    const r = implicitRole(el);
    if ((r === 'generic' || r === '' || r === 'paragraph') && editableOf(el)) {
      const p = parentOf(el);
      if (!(p && type(p) === ELEMENT && editableOf(p))) return 'textbox';
    }
    return r;
  }

  // The role the browser exposes: the first token of `role` it knows, unless it
  // is none/presentation on an element that must keep its own (focusable, or
  // with a global ARIA attribute); else the element's implicit role.
  function computedRole(el) {
    if (!el || type(el) !== ELEMENT) return '';
    const explicit = tokens(lower(attr(el, 'role')));
    for (let i = 0; i < explicit.length; i++) {
      let r = explicit[i];
      if (!inSet(ARIA_ROLES, r)) continue;
      if (r === 'image') r = 'img';
      if (r === 'none' || r === 'presentation') {
        if (focusable(el)) continue;
        let global = false;
        for (let k = 0; k < GLOBAL_ARIA.length; k++) if (has(el, GLOBAL_ARIA[k])) { global = true; break; }
        if (global) continue;
        return 'none';
      }
      return r;
    }
    const r = implicitOrEditable(el);
    return r === 'presentation' ? 'none' : r;
  }

  // Roles named by their content (ARIA's "name from: contents").
  const FROM_CONTENT = new Set(['button', 'cell', 'checkbox', 'columnheader', 'gridcell', 'heading', 'link', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'row', 'rowheader', 'switch', 'tab', 'tooltip', 'treeitem',
    'comment', 'term']);
  // Roles whose content is not taken even while walking another element's
  // content (as Chromium does): composite widgets speak through their value.
  const NEVER_CONTENT = new Set(['menu', 'menubar', 'tablist', 'tree', 'treegrid', 'grid', 'toolbar', 'radiogroup']);
  const RANGE = new Set(['slider', 'spinbutton', 'progressbar', 'scrollbar', 'meter']);
  const TEXTBOX = new Set(['textbox', 'searchbox']);

  // --- the computation ----------------------------------------------------------------
  function newCtx(root) {
    return { root, nodes: 0, len: 0, visited: new Set() };
  }

  const byId = (el, id) => {
    const root = call(m.getRootNode, el);
    try {
      if (type(root) === 9) return call(m.docById, root, id);
      if (type(root) === 11) return call(m.fragById, root, id);
    } catch (e) { /* a foreign node */ }
    return null;
  };

  function labelledBy(el, c) {
    const ids = tokens(attr(el, 'aria-labelledby'));
    let out = '';
    for (let i = 0; i < ids.length && i < 50; i++) {
      const ref = byId(el, ids[i]);
      if (!ref || inSet(c.visited, ref)) continue;
      call(m.add, c.visited, ref);
      // A hidden element named by id still lends its text, all of it.
      const hidden = hiddenDeep(ref);
      const t = squash(text(ref, c, { inLabelledBy: true, hiddenOk: hidden, recursion: true, fromContent: true }, 0));
      if (t) out += (out ? ' ' : '') + t;
    }
    return out;
  }

  const optionText = (o, c) => squash(text(o, c, { recursion: true, fromContent: true, inLabel: true }, 0));

  function selectedOptions(sel) {
    const out = [];
    const opts = get(g.selectOptions, sel);
    const n = opts ? get(g.collLength, opts) : 0;
    for (let i = 0; i < n && i < 1000; i++) {
      const o = call(m.collItem, opts, i);
      if (get(g.optionSelected, o)) out[out.length] = o;
    }
    return out;
  }

  // The value of a control met inside another element's label (accname 2C/2E).
  function embeddedValue(el, r, c) {
    const t = tag(el);
    if (inSet(TEXTBOX, r)) {
      if (t === 'input') return S(get(g.inputValue, el));
      if (t === 'textarea') return S(get(g.textareaValue, el));
      return squash(text(el, c, { recursion: true, fromContent: true, inLabel: true, skipEmbedded: true }, 0));
    }
    if (r === 'combobox' || r === 'listbox') {
      if (t === 'select') {
        const sel = selectedOptions(el);
        let out = '';
        for (let i = 0; i < sel.length; i++) out += (out ? ' ' : '') + optionText(sel[i], c);
        return out;
      }
      if (t === 'input') return S(get(g.inputValue, el));
      // An ARIA widget: its chosen option (aria-selected), or for a combobox the
      // value of the text box it holds.
      const found = findDesc(el, (n) => {
        const nr = computedRole(n);
        if (nr === 'option' && lower(attr(n, 'aria-selected')) === 'true') return 'option';
        if (r === 'combobox' && inSet(TEXTBOX, nr)) return 'textbox';
        return '';
      }, c);
      for (let i = 0; i < found.length; i++) {
        const n = found[i][0], kind = found[i][1];
        if (kind === 'option') return optionText(n, c);
        const v = embeddedValue(n, computedRole(n), c);
        if (squash(v)) return v;
      }
      return '';
    }
    if (inSet(RANGE, r)) {
      const vt = attr(el, 'aria-valuetext');
      if (trim(vt)) return vt;
      const vn = attr(el, 'aria-valuenow');
      if (trim(vn)) return vn;
      if (t === 'input') return S(get(g.inputValue, el));
      if (t === 'meter' || t === 'progress') return S(attr(el, 'value'));
      return '';
    }
    return null;
  }

  // Children in the accessibility tree: the composed tree's, then what
  // aria-owns adopts (each element once per name).
  function ownedKids(el, c) {
    const kids = children(el);
    const owned = tokens(attr(el, 'aria-owns'));
    for (let i = 0; i < owned.length && i < 50; i++) {
      const ow = byId(el, owned[i]);
      if (ow && !inSet(c.visited, ow)) { call(m.add, c.visited, ow); kids[kids.length] = ow; }
    }
    return kids;
  }

  function findDesc(el, pick, c) {
    const out = [];
    const walk = (n, depth) => {
      if (depth > 50 || c.nodes++ > MAX_NODES) return;
      const kids = ownedKids(n, c);
      for (let i = 0; i < kids.length; i++) {
        const k = kids[i];
        if (type(k) !== ELEMENT) continue;
        const kind = pick(k);
        if (kind) out[out.length] = [k, kind];
        walk(k, depth + 1);
      }
    };
    walk(el, 0);
    return out;
  }

  // CSS generated content (::before, ::after): its strings and, for an image,
  // the alternative text after a slash.
  function generated(el, pseudo) {
    const st = style(el, pseudo);
    if (!st) return '';
    const content = prop(st, 'content');
    if (!content || content === 'none' || content === 'normal') return '';
    if (prop(st, 'display') === 'none') return '';
    const v = prop(st, 'visibility');
    if (v === 'hidden' || v === 'collapse') return '';
    let s = content;
    const slash = /\/\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*$/;
    const alt = call(m.exec, slash, s);
    if (alt) return unquote(alt[1]);
    let out = '';
    const re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/g;
    let hit;
    let guard = 0;
    while ((hit = call(m.exec, re, s)) && guard++ < 100) out += unquote('"' + (hit[1] !== undefined ? hit[1] : hit[2]) + '"');
    const inline = prop(st, 'display') === 'inline';
    return out && !inline ? ' ' + out + ' ' : out;
  }
  const unquote = (q) => call(m.replace, call(m.slice, q, 1, -1), /\\(.)/g, '$1');

  const nativeLabelText = (el, c) => {
    const getL = labelsGetter[tag(el)];
    if (!getL) return '';
    let labels;
    try { labels = get(getL, el); } catch (e) { return ''; }
    if (!labels) return '';
    const n = get(g.listLength, labels);
    let out = '';
    for (let i = 0; i < n && i < 20; i++) {
      const l = call(m.item, labels, i);
      if (!l || inSet(c.visited, l)) continue;
      call(m.add, c.visited, l);
      const t = squash(text(l, c, { recursion: true, fromContent: true, inLabel: true, hiddenOk: false }, 0));
      if (t) out += (out ? ' ' : '') + t;
    }
    return out;
  };

  const firstChildTag = (el, want) => {
    const kids = children(el);
    for (let i = 0; i < kids.length; i++) if (type(kids[i]) === ELEMENT && tag(kids[i]) === want) return kids[i];
    return null;
  };

  // The host language's own label (html-aam), accname 2E.
  function nativeName(el, r, c, o) {
    const t = tag(el);
    if (isSVG(el)) {
      const title = firstChildTag(el, 'title');
      return title ? squash(text(title, c, { recursion: true, fromContent: true, hiddenOk: true }, 0)) : '';
    }
    if (!isHTML(el)) return '';
    if (t === 'input') {
      const ty = inputType(el);
      if (ty === 'button' || ty === 'submit' || ty === 'reset') {
        const v = attr(el, 'value');
        if (v !== null && trim(v) !== '') return v;
        if (ty === 'submit') return 'Submit';
        if (ty === 'reset') return 'Reset';
        return nativeLabelText(el, c);
      }
      if (ty === 'image') {
        const lbl = nativeLabelText(el, c);
        if (squash(lbl)) return lbl;
        const alt = attr(el, 'alt');
        if (alt !== null && trim(alt)) return alt;
        const v = attr(el, 'value');
        if (v !== null && trim(v)) return v;
        if (trim(attr(el, 'title'))) return '';
        return 'Submit';
      }
    }
    if (labelsGetter[t] && !o.inLabel) {
      const lbl = nativeLabelText(el, c);
      if (squash(lbl)) return lbl;
    }
    if (t === 'img' || t === 'area') {
      // An alt attribute, even empty, is the author's word: no tooltip after it.
      const alt = attr(el, 'alt');
      return alt !== null ? { final: alt } : '';
    }
    if (t === 'input' && inputType(el) === 'file') {
      // Chromium names a file chooser by its label, else by its button's own
      // text, never by title.
      const lbl = nativeLabelText(el, c);
      if (squash(lbl)) return lbl;
      return { final: has(el, 'multiple') ? 'Choose Files' : 'Choose File' };
    }
    if (t === 'fieldset') {
      const lg = firstChildTag(el, 'legend');
      return lg ? squash(text(lg, c, { recursion: true, fromContent: true, inLabel: true }, 0)) : '';
    }
    // html-aam names a figure by its figcaption; Chromium (156) does not, and
    // read_page shows the caption as the figure's child text anyway.
    if (t === 'table') {
      const cap = firstChildTag(el, 'caption');
      return cap ? squash(text(cap, c, { recursion: true, fromContent: true, inLabel: true }, 0)) : '';
    }
    if (t === 'optgroup') return S(attr(el, 'label'));
    if (t === 'option' && has(el, 'label') && trim(attr(el, 'label'))) return attr(el, 'label');
    return '';
  }

  // The text alternative of `node` (accname 2A-2I). `o` says how we got here:
  // recursion (inside another element's name), inLabelledBy, inLabel (a label
  // element or native text alternative), hiddenOk (inside a hidden element that
  // aria-labelledby named), fromContent (the parent is being named by content).
  function text(node, c, o, depth) {
    if (c.len > MAX_RAW || c.nodes++ > MAX_NODES || depth > MAX_DEPTH) return '';
    const nt = type(node);
    if (nt === TEXT) {
      const d = S(get(g.data, node));
      c.len += d.length;
      return d;
    }
    if (nt !== ELEMENT) return '';
    const el = node;
    const t = tag(el);
    if (t === 'script' || t === 'style' || t === 'template' || t === 'noscript' || t === 'head' ||
      (t === 'title' && !isSVG(el))) return '';
    // 2A: hidden and not inside a hidden element aria-labelledby named.
    let visibleSelf = true;
    if (!o.hiddenOk) {
      if (lower(attr(el, 'aria-hidden')) === 'true') return '';
      const st = style(el);
      if (st) {
        if (prop(st, 'display') === 'none') return '';
        const v = prop(st, 'visibility');
        if (v === 'hidden' || v === 'collapse') visibleSelf = false;
      }
    }
    // The labelled control met again inside its own label: not part of it.
    if (o.recursion && el === c.root && !o.inLabelledBy && o.inLabel) return '';
    const r = computedRole(el);
    // 2B: aria-labelledby, not followed from inside another aria-labelledby.
    if (!o.inLabelledBy && !o.skipLabelledBy) {
      const lb = labelledBy(el, c);
      if (squash(lb)) return lb;
    }
    // 2C: a control inside another element's label lends its value.
    if (o.recursion && el !== c.root && !o.skipEmbedded) {
      const ev = embeddedValue(el, r, c);
      if (ev !== null) {
        if (squash(ev) || !inSet(TEXTBOX, r)) return ev;
      }
    }
    // 2D: aria-label.
    const al = attr(el, 'aria-label');
    if (trim(al)) return al;
    // 2E: the host language's label, unless the author said it presents nothing.
    if (r !== 'none') {
      const nn = nativeName(el, r, c, o);
      if (nn && typeof nn === 'object') return nn.final;
      if (squash(nn)) return nn;
    }
    // 2F: the content, for roles named by it or while inside another name.
    const fromContent = o.fromContent && el !== c.root ? !inSet(NEVER_CONTENT, r)
      : inSet(FROM_CONTENT, r) || o.recursion || o.inLabel || o.inLabelledBy;
    if (fromContent && !(el === c.root && (inSet(TEXTBOX, r) || r === 'combobox' || r === 'listbox' || inSet(RANGE, r)))
      && !(t === 'select' || t === 'textarea' || t === 'input')) {
      let out = generated(el, '::before');
      const kids = ownedKids(el, c);
      for (let i = 0; i < kids.length; i++) {
        const k = kids[i];
        if (c.len > MAX_RAW) break;
        const kt = type(k);
        if (kt === TEXT) {
          if (visibleSelf) out += text(k, c, o, depth + 1);
          continue;
        }
        if (kt !== ELEMENT) continue;
        const kst = o.hiddenOk ? null : style(k);
        const disp = kst ? prop(kst, 'display') : 'inline';
        const piece = text(k, c, { recursion: true, inLabelledBy: o.inLabelledBy, inLabel: o.inLabel, hiddenOk: o.hiddenOk,
          fromContent: true }, depth + 1);
        const block = (disp && disp !== 'inline' && disp !== 'contents') || tag(k) === 'br';
        out += block ? ' ' + piece + ' ' : piece;
      }
      out += generated(el, '::after');
      if (squash(out)) return out;
    }
    // 2I: the tooltip; for text fields the placeholder comes first.
    if (t === 'input' || t === 'textarea') {
      const ph = attr(el, 'placeholder');
      if (trim(ph) && t !== 'input' || trim(ph) && inputType(el) !== 'hidden') {
        if (trim(attr(el, 'title'))) return attr(el, 'title');
        return ph;
      }
    }
    // A presentational element's tooltip is not shown either.
    if (r === 'none') return '';
    const title = attr(el, 'title');
    if (trim(title)) return title;
    if (inSet(TEXTBOX, r) || r === 'combobox') {
      const ap = attr(el, 'aria-placeholder');
      if (trim(ap)) return ap;
    }
    return '';
  }

  function name(el) {
    if (!el || type(el) !== ELEMENT) return '';
    const c = newCtx(el);
    try {
      return cut(text(el, c, { recursion: false }, 0));
    } catch (e) {
      return '';
    }
  }

  function role(el) {
    try { return computedRole(el); } catch (e) { return ''; }
  }

  return { name, role, hidden: hiddenDeep };
  };
  const use = () => impl || (impl = make());
  return {
    name: (el) => use().name(el),
    role: (el) => use().role(el),
    hidden: (el) => use().hidden(el),
  };
})();
