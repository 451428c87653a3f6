// The live view page: draws the sandbox browser's screencast on a canvas and sends the person's input.
// Protocol: rpc/models/live.py. Credentials: the link's one-time token (in the URL fragment, never sent
// to a server as part of a URL) is exchanged once for this view's HttpOnly cookie, then removed from
// the address bar.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const canvas = $("screen");
  const ctx = canvas.getContext("2d");
  const viewPath = location.pathname.replace(/\/+$/, "");
  // What the page knows, readable for debugging and tests.
  const state = (window.liveView = {
    frames: 0, lastFrameAt: 0, connected: false, ended: false, refused: null,
    acting: false, tool: null, status: null, notices: [], doneSent: false,
  });
  let ws = null;
  let drawn = 0;
  let received = 0;
  let retry = 500;

  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (location.hash) history.replaceState(null, "", location.pathname);

  function notice(message, level, final) {
    state.notices.push({ message, level });
    const el = $("notice");
    el.textContent = message;
    el.className = level === "error" ? "error" : "";
    el.hidden = false;
    if (final) state.ended = true;
  }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  // -- what comes in -------------------------------------------------------------------------
  function drawFrame(m) {
    const seq = ++received;
    const img = new Image();
    img.onload = () => {
      if (seq < drawn) return; // an older frame decoded late
      drawn = seq;
      if (canvas.width !== Math.round(m.width) || canvas.height !== Math.round(m.height)) {
        canvas.width = Math.round(m.width) || img.width;
        canvas.height = Math.round(m.height) || img.height;
      }
      ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
      state.frames += 1;
      state.frameSize = [img.naturalWidth, img.naturalHeight]; // the picture's own pixels, for a look from outside
      state.lastFrameAt = performance.now();
    };
    img.src = "data:image/jpeg;base64," + m.data;
  }

  function showStatus(m) {
    state.status = m;
    const tabs = $("tabs");
    tabs.replaceChildren();
    for (const tab of m.tabs) {
      const b = document.createElement("button");
      b.textContent = tab.title || tab.url || tab.tabId;
      b.title = tab.url;
      b.dataset.tabId = tab.tabId;
      b.setAttribute("role", "tab");
      b.setAttribute("aria-selected", String(tab.active));
      if (tab.active) b.className = "active";
      b.addEventListener("click", () => send({ type: "tab", action: "select", tabId: tab.tabId }));
      tabs.append(b);
    }
    const plus = document.createElement("button");
    plus.textContent = "+";
    plus.title = "New tab";
    plus.id = "new-tab";
    plus.addEventListener("click", () => send({ type: "tab", action: "new" }));
    tabs.append(plus);
    if (document.activeElement !== $("url")) $("url").value = m.url;
    document.title = (m.title || m.url || "Live view") + " — Boxwright";
    $("dialog").hidden = !m.dialog;
    $("dialog-text").textContent = m.dialog || "";
  }

  function showActivity(m) {
    state.acting = m.acting;
    state.tool = m.tool;
    const el = $("banner");
    el.hidden = !m.acting;
    el.textContent = m.acting ? `The agent is acting on this page${m.tool ? ` (${m.tool})` : ""}…` : "";
  }

  const handlers = {
    frame: drawFrame,
    status: showStatus,
    agent: showActivity,
    notice: (m) => notice(m.message, m.level, m.final),
  };

  // -- connection ----------------------------------------------------------------------------
  function connect() {
    if (state.ended) return;
    ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + viewPath + "/ws");
    ws.onopen = () => { state.connected = true; retry = 500; };
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      const handle = handlers[m.type];
      if (handle) handle(m);
    };
    ws.onclose = (ev) => {
      state.connected = false;
      if (state.ended) return;
      if (ev.code === 1008) { // refused (the view ended, or this cookie is no longer its): retrying cannot help
        notice("this live view is no longer available — ask for a new link", "error", true);
        return;
      }
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 8000);
    };
  }

  async function start() {
    const response = await fetch(viewPath + "/session", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(token ? { token } : {}),
      credentials: "same-origin",
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({ error: "this live view refused the link" }));
      state.refused = body.error;
      notice(body.error + (body.recoverHint ? " — " + body.recoverHint : ""), "error", true);
      return;
    }
    const info = await response.json();
    if (info.doneButton) $("done").hidden = false;
    if (info.title) notice(info.title, "info", false);
    connect();
  }

  // -- what goes out -------------------------------------------------------------------------
  function modifiers(ev) {
    return (ev.altKey ? 1 : 0) | (ev.ctrlKey ? 2 : 0) | (ev.metaKey ? 4 : 0) | (ev.shiftKey ? 8 : 0);
  }
  function point(ev) {
    const r = canvas.getBoundingClientRect();
    return {
      x: ((ev.clientX - r.left) * canvas.width) / r.width,
      y: ((ev.clientY - r.top) * canvas.height) / r.height,
    };
  }
  const BUTTONS = ["left", "middle", "right"];
  function mouse(event, ev) {
    const { x, y } = point(ev);
    send({
      type: "mouse", event, x, y,
      button: event === "mouseMoved" ? "none" : BUTTONS[ev.button] || "none",
      buttons: ev.buttons, clickCount: event === "mouseMoved" ? 0 : Math.min(ev.detail || 1, 3),
      modifiers: modifiers(ev),
    });
  }
  canvas.addEventListener("mousedown", (ev) => { canvas.focus(); ev.preventDefault(); mouse("mousePressed", ev); });
  canvas.addEventListener("mouseup", (ev) => { ev.preventDefault(); mouse("mouseReleased", ev); });
  let pendingMove = null;
  canvas.addEventListener("mousemove", (ev) => {
    if (pendingMove === null) requestAnimationFrame(() => { mouse("mouseMoved", pendingMove); pendingMove = null; });
    pendingMove = ev;
  });
  canvas.addEventListener("contextmenu", (ev) => ev.preventDefault());
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const { x, y } = point(ev);
    send({ type: "wheel", x, y, deltaX: ev.deltaX, deltaY: ev.deltaY, modifiers: modifiers(ev) });
  }, { passive: false });

  function key(event, ev) {
    const isPaste = (ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "v";
    if (isPaste) return; // the paste event sends the text
    ev.preventDefault();
    const types = ev.key.length === 1 && !ev.ctrlKey && !ev.metaKey && !ev.altKey;
    send({
      type: "key", event, key: ev.key.slice(0, 32), code: ev.code.slice(0, 32), keyCode: ev.keyCode & 255,
      text: event === "down" && types ? ev.key : "", location: ev.location, modifiers: modifiers(ev),
    });
  }
  canvas.addEventListener("keydown", (ev) => key("down", ev));
  canvas.addEventListener("keyup", (ev) => key("up", ev));
  canvas.addEventListener("paste", (ev) => {
    const text = ev.clipboardData ? ev.clipboardData.getData("text") : "";
    if (text) { ev.preventDefault(); send({ type: "text", text }); }
  });

  $("go").addEventListener("submit", (ev) => {
    ev.preventDefault();
    let url = $("url").value.trim();
    if (!url) return;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) url = "https://" + url;
    send({ type: "navigate", url });
    canvas.focus();
  });
  $("send").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("text").value;
    if (text) send({ type: "text", text });
    $("text").value = "";
    canvas.focus();
  });
  $("back").addEventListener("click", () => send({ type: "history", action: "back" }));
  $("forward").addEventListener("click", () => send({ type: "history", action: "forward" }));
  $("reload").addEventListener("click", () => send({ type: "history", action: "reload" }));
  $("dialog-ok").addEventListener("click", () => send({ type: "dialog", accept: true }));
  $("dialog-cancel").addEventListener("click", () => send({ type: "dialog", accept: false }));
  $("done").addEventListener("click", () => { state.doneSent = true; send({ type: "done" }); $("done").disabled = true; });

  start().catch((err) => notice("the live view could not start: " + err, "error", true));
})();
