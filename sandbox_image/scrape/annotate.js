// Runs in the rendered page: marks what a reader cannot see and where the blocks are, then returns
// the page's HTML with those marks. Nothing in the live page is changed: the marks go on a clone.
//
//   data-bw-hidden="display|visibility|collapsed|offscreen|aria"   the reader cannot see it
//   data-bw-hidden="visibility-text"   its own text is invisible, but a descendant is visible
//   data-bw-box="x y w h"                                           layout box (CSS px, page coords)
//   data-bw-fs="16"                                                 computed font size of a block
//
// Open shadow roots are inlined into the clone, so their text is part of the HTML too.
//
// options.frames: <iframe>/<frame> elements of this document whose own documents the caller reads
// (frames.py); the clone marks each data-bw-frame="i" and `frames` returns their boxes. options.offset:
// where this document's viewport sits on the top page (a frame's), added to every box.
// options.include / options.exclude: the caller's CSS selectors (scrape's includeTags / excludeTags),
// matched here by the browser's own engine, in the document and in each open shadow root; the clone marks
// what they match data-bw-include / data-bw-exclude. A selector the browser cannot parse answers
// { badSelector, field } and nothing else.
(options) => {
  const maxBoxes = (options && options.maxBoxes) || 20000;
  const frameElements = (options && options.frames) || [];
  const offset = (options && options.offset) || [0, 0];
  const offsetX = offset[0] || 0, offsetY = offset[1] || 0;
  const doc = document;
  const root = doc.documentElement;
  if (!root) return { html: "", stats: {}, frames: [] };
  const selected = { include: new Set(), exclude: new Set() };
  const wanted = options && ((options.include || []).length || (options.exclude || []).length);
  // Selectors match in the document and in every open shadow root, each on its own (as querySelectorAll
  // on that root: a combinator does not cross into a shadow tree), so a web component's content counts.
  const scopes = [doc];
  for (let i = 0; wanted && i < scopes.length; i++) {
    for (const el of scopes[i].querySelectorAll("*")) if (el.shadowRoot) scopes.push(el.shadowRoot);
  }
  for (const [field, kind] of [["includeTags", "include"], ["excludeTags", "exclude"]]) {
    for (const selector of (options && options[kind]) || []) {
      try {
        for (const scope of scopes) for (const el of scope.querySelectorAll(selector)) selected[kind].add(el);
      } catch (error) {
        return { badSelector: selector, field, reason: String(error && error.message || error) };
      }
    }
  }
  const scrollX = window.scrollX, scrollY = window.scrollY;
  const docWidth = Math.max(root.scrollWidth, window.innerWidth);
  const docHeight = Math.max(root.scrollHeight, window.innerHeight);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "SVG", "svg"]);
  const BLOCKY = new Set(["block", "flex", "grid", "list-item", "table", "table-row", "table-cell", "flow-root"]);
  const hidden = new Map(); // element -> reason
  const boxes = new Map(); // element -> [x, y, w, h, fontSize]
  const stats = { elements: 0, hidden: 0, boxes: 0 };

  const hasText = (el) => {
    for (const child of el.childNodes) if (child.nodeType === 3 && child.data.trim()) return true;
    return false;
  };
  // Something inside a visibility:hidden subtree can be made visible again; those keep the subtree.
  const visibleInside = (el) => {
    for (const d of el.querySelectorAll("*")) {
      if (getComputedStyle(d).visibility === "visible" && d.textContent.trim()) return true;
    }
    return false;
  };

  const visit = (el) => {
    stats.elements++;
    if (SKIP.has(el.tagName)) return;
    const cs = getComputedStyle(el);
    if (cs.display === "none") {
      hidden.set(el, "display");
      return;
    }
    if (el.getAttribute("aria-hidden") === "true" && el.tagName !== "BODY" && el.tagName !== "HTML") {
      // Kept apart from the other reasons: sites use it on decoration and duplicate slides, but
      // rarely on text a reader is meant to read. The extractor decides what to do with it.
      hidden.set(el, "aria");
    }
    if (cs.visibility === "hidden" || cs.visibility === "collapse") {
      if (!visibleInside(el)) {
        hidden.set(el, "visibility");
        return;
      }
      hidden.set(el, "visibility-text"); // its own text is invisible, a descendant is shown again
    }
    if (cs.display !== "contents") {
      const rect = el.getBoundingClientRect();
      const clips = cs.overflow !== "visible" || cs.clip !== "auto" || cs.clipPath !== "none";
      if ((rect.width < 2 || rect.height < 2) && clips && el.textContent.trim()) {
        hidden.set(el, "collapsed"); // collapsed accordions, "sr-only" text
        return;
      }
      const x = rect.left + scrollX, y = rect.top + scrollY;
      if (
        (cs.position === "absolute" || cs.position === "fixed") &&
        (x + rect.width <= 0 || y + rect.height <= 0 || x >= docWidth || y >= docHeight)
      ) {
        hidden.set(el, "offscreen"); // skip links, off-canvas menus
        return;
      }
      if (boxes.size < maxBoxes && BLOCKY.has(cs.display) && (hasText(el) || el.children.length)) {
        boxes.set(el, [Math.round(x + offsetX), Math.round(y + offsetY), Math.round(rect.width),
          Math.round(rect.height), Math.round(parseFloat(cs.fontSize) || 0)]);
      }
    }
    for (const child of el.children) visit(child);
    if (el.shadowRoot) for (const child of el.shadowRoot.children) visit(child);
  };
  if (doc.body) visit(doc.body);

  const shown = (el) => {
    const up = (node) => (node.parentNode instanceof ShadowRoot ? node.parentNode.host : node.parentElement);
    for (let node = el; node; node = up(node)) {
      const reason = hidden.get(node);
      if (reason && reason !== "aria" && reason !== "visibility-text") return false;
    }
    return true;
  };

  // Clone with the marks: walk the original and the clone in step (same structure). The copies are made in
  // a document of their own, with no browsing context: an <img> copied there loads nothing (a copy in the
  // page would ask the network again for each picture that did not load — a blocked ad, a broken link, a
  // tracking pixel counted twice) and a custom element is not upgraded (its constructor, which may navigate
  // the page, does not run). One difference in how that document writes HTML: with no scripting there, a
  // <noscript>'s content would come out escaped, so each one's content is the page's own, put back after.
  const inert = doc.implementation.createHTMLDocument("");
  const noscripts = [];
  const frameIndex = new Map(frameElements.map((el, i) => [el, i]));
  const cloneWithMarks = (src) => {
    const copy = inert.importNode(src, false);
    if (src.nodeType === 1) {
      const reason = hidden.get(src);
      if (reason) { copy.setAttribute("data-bw-hidden", reason); stats.hidden++; }
      const frame = frameIndex.get(src);
      if (frame !== undefined) copy.setAttribute("data-bw-frame", String(frame));
      if (selected.include.has(src)) copy.setAttribute("data-bw-include", "");
      if (selected.exclude.has(src)) copy.setAttribute("data-bw-exclude", "");
      const box = boxes.get(src);
      if (box) {
        copy.setAttribute("data-bw-box", box.slice(0, 4).join(" "));
        copy.setAttribute("data-bw-fs", String(box[4]));
        stats.boxes++;
      }
      if (src.shadowRoot && src.shadowRoot.mode === "open") {
        for (const child of src.shadowRoot.childNodes) copy.appendChild(cloneWithMarks(child));
      }
      // Form fields: what the reader sees is the current value, not the markup's default.
      if (src.tagName === "TEXTAREA") {
        copy.textContent = src.value;
        return copy;
      }
      if (src.tagName === "TEMPLATE") return copy;
      if (src.tagName === "NOSCRIPT") {
        copy.setAttribute("data-bw-noscript", String(noscripts.length));
        noscripts.push(src.innerHTML);
        return copy;
      }
    }
    for (const child of src.childNodes) copy.appendChild(cloneWithMarks(child));
    return copy;
  };
  const clone = cloneWithMarks(root);
  let doctype = "";
  if (doc.doctype) doctype = "<!DOCTYPE " + doc.doctype.name + ">";
  let html = doctype + clone.outerHTML;
  if (noscripts.length) {
    html = html.replace(/ data-bw-noscript="(\d+)"><\/noscript>/g, (_, i) => ">" + noscripts[Number(i)] + "</noscript>");
  }
  return {
    html,
    title: doc.title || "",
    lang: root.getAttribute("lang") || "",
    width: docWidth,
    height: docHeight,
    viewportWidth: window.innerWidth,
    stats,
    // Where each frame's viewport sits on the top page (inside its border), its size, and whether a reader
    // can see it (neither it nor an ancestor hidden).
    frames: frameElements.map((el) => {
      const r = el.getBoundingClientRect();
      const x = r.left + scrollX + el.clientLeft + offsetX, y = r.top + scrollY + el.clientTop + offsetY;
      return [Math.round(x), Math.round(y), el.clientWidth, el.clientHeight, shown(el)];
    }),
  };
}
