// TeamClaw live pages (/live/ and a task's page): one websocket, server-rendered fragments.
//
// The server sends frames (see monitoring/consumers.py):
//   {type: "state",  seq, resync, dropped, fills: [{into, html}]}  replace the inside of containers
//                                                       (dropped: events this socket missed so far)
//   {type: "events", seq, events: [{kind, key, data, swap: {id, into, where, html}}]}
//   {type: "behind", seq, dropped}                         we fell behind; a state frame follows
// and we acknowledge every frame after applying it ({type: "ack", seq}) - that is the flow
// control that keeps a slow tab from piling up data on the server.
(function () {
  "use strict";

  const root = document.querySelector("[data-live-socket]");
  if (!root) return;
  const statusEls = document.querySelectorAll("[data-live-status]");
  const MAX_ROWS = 200;
  const MAX_CARDS = 120;
  const GRAPH_TYPES = new Set(["invoke_request", "hook_event"]);
  const FINAL = new Set(["completed", "failed", "terminated"]);
  const timers = {};
  let socket = null;
  let attempt = 0;
  let closedByPage = false;

  // Strings come from Django's JavaScript catalog (/i18n/js/, loaded by base.html) in the
  // page's language; without it they stay English.
  const gettext = window.gettext || function (text) { return text; };
  const interpolate = window.interpolate || function (text, values) { return text.replace("%s", values[0]); };
  const ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };

  function setStatus(text, kind) {
    statusEls.forEach(function (el) {
      el.textContent = text;
      el.className = "badge live-" + kind;
    });
    root.dataset.liveState = kind;
  }

  // A fragment rendered for a socket has no request, so its forms carry no CSRF token:
  // give them this page's (the one htmx sends in its X-CSRFToken header).
  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (err) {
      return "";
    }
  }

  function activate(el) {
    if (!el) return;
    const token = csrfToken();
    el.querySelectorAll('form[method="post"]').forEach(function (form) {
      let input = form.querySelector('input[name="csrfmiddlewaretoken"]');
      if (!input) {
        input = document.createElement("input");
        input.type = "hidden";
        input.name = "csrfmiddlewaretoken";
        form.prepend(input);
      }
      if (!input.value) input.value = token;
    });
    if (window.htmx) window.htmx.process(el);
  }

  function clearEmpty(container) {
    container.querySelectorAll(":scope > .empty, :scope > .empty-row").forEach(function (el) {
      el.remove();
    });
  }

  function trim(container) {
    if (container.tagName === "TBODY") {
      while (container.rows.length > MAX_ROWS) container.deleteRow(-1);
    } else if (container.classList.contains("cards")) {
      const finished = container.querySelectorAll(":scope > .ctx-card.final");
      let extra = container.children.length - MAX_CARDS;
      for (let i = 0; extra > 0 && i < finished.length; i += 1, extra -= 1) finished[i].remove();
    }
  }

  function fromHTML(html, containerTag) {
    // <tr> must be parsed inside a table context to survive. Only a row is looked for in
    // one: any other fragment is its own first element, even when it holds a table (a
    // review point's positions), whose first row must not replace it.
    const tpl = document.createElement("template");
    const row = containerTag === "TBODY" || html.trim().startsWith("<tr");
    tpl.innerHTML = row ? "<table><tbody>" + html + "</tbody></table>" : html;
    return row ? tpl.content.querySelector("tbody > tr") : tpl.content.firstElementChild;
  }

  function fill(f) {
    const container = document.getElementById(f.into);
    if (!container) return;
    // A state frame (on connect, after a resync) redraws the region; what the operator is
    // typing in it stays: each element holding typed text is put back in place of its
    // redrawn self, marked stale when that is gone or no longer in the same state.
    const kept = [];
    container.querySelectorAll("textarea, input[type=text]").forEach(function (field) {
      const holder = field.value !== field.defaultValue ? field.closest("[id]") : null;
      if (holder && container.contains(holder) && holder !== container && kept.indexOf(holder) < 0) kept.push(holder);
    });
    container.innerHTML = f.html;
    kept.forEach(function (old) {
      const fresh = document.getElementById(old.id);
      if (fresh && fresh.dataset.status === old.dataset.status) {
        fresh.replaceWith(old);
      } else {
        if (fresh) fresh.replaceWith(old);
        else container.prepend(old);
        markStale(old);
      }
    });
    activate(container);
  }

  // True when the operator has typed into a field of ``el`` (its value differs from the one
  // the page rendered): a live update must not throw that text away.
  function dirty(el) {
    return Array.prototype.some.call(el.querySelectorAll("textarea, input[type=text]"), function (field) {
      return field.value !== field.defaultValue;
    });
  }

  function markStale(el) {
    if (el.querySelector(".stale-note")) return;
    const note = document.createElement("p");
    note.className = "stale-note error";
    note.setAttribute("role", "alert");
    note.textContent =
      gettext("This changed meanwhile (answered in another tab, or a newer request). Your text is kept here: copy it, then reload the page.");
    el.prepend(note);
    // Its forms answer a request that is gone: sending them would only be refused.
    el.querySelectorAll('button[type="submit"]').forEach(function (button) {
      button.disabled = true;
    });
  }

  function swap(s) {
    const existing = document.getElementById(s.id);
    if (existing && dirty(existing)) {
      markStale(existing);
      return;
    }
    if (existing) {
      const el = fromHTML(s.html, existing.parentElement && existing.parentElement.tagName);
      if (!el) return;
      if (existing.tagName === "DETAILS" && existing.open) el.open = true;
      existing.replaceWith(el);
      activate(el);
      return;
    }
    const container = document.getElementById(s.into);
    if (!container) return;
    clearEmpty(container);
    container.insertAdjacentHTML(s.where, s.html);
    const inserted = document.getElementById(s.id);
    const home = group(container, inserted, s.where);
    activate(inserted);
    trim(home);
  }

  // The live page groups agent cards by task (container [data-group-by="task"]): a card the
  // server inserts into the container moves into its task's group, made with the task's
  // title (data-task-title) when it is the task's first card. Returns where the card is.
  function group(container, card, where) {
    if (!card || container.dataset.groupBy !== "task" || !card.dataset.task) return container;
    let section = Array.prototype.find.call(container.querySelectorAll(":scope > .task-group"), function (g) {
      return g.dataset.taskGroup === card.dataset.task;
    });
    if (!section) {
      section = document.createElement("section");
      section.className = "task-group";
      section.dataset.taskGroup = card.dataset.task;
      const heading = document.createElement("h3");
      heading.className = "small";
      const link = document.createElement("a");
      link.href = "/tasks/" + encodeURIComponent(card.dataset.task) + "/";
      link.textContent = card.dataset.taskTitle || card.dataset.task;
      heading.appendChild(link);
      const cards = document.createElement("div");
      cards.className = "cards";
      section.append(heading, cards);
      container.prepend(section);
    }
    const cards = section.querySelector(":scope > .cards");
    if (where === "afterbegin") cards.prepend(card);
    else cards.append(card);
    countAgents(section);
    return cards;
  }

  // The group's heading says how many agent cards it holds ("6 个智能体"), kept true as cards
  // arrive live (the server counts only those on the page when it is drawn).
  function countAgents(section) {
    const heading = section.querySelector(":scope > h3");
    if (!heading) return;
    let count = heading.querySelector(".agent-count");
    if (!count) {
      count = document.createElement("span");
      count.className = "muted agent-count";
      heading.append(" ", count);
    }
    const n = section.querySelectorAll(":scope > .cards > .ctx-card").length;
    count.textContent = interpolate(ngettext("%s agent", "%s agents", n), [n]);
  }

  // Trailing throttle: run fn once, ms after the first call of a burst (later calls in the
  // burst are covered by it, since fn fetches the current state).
  function soon(key, ms, fn) {
    if (timers[key]) return;
    timers[key] = window.setTimeout(function () {
      delete timers[key];
      fn();
    }, ms);
  }

  function signal(ev) {
    if (ev.kind === "message" && GRAPH_TYPES.has(ev.data.type)) {
      soon("graph", 1200, function () {
        const graph = document.getElementById("call-graph");
        if (graph && window.htmx) window.htmx.trigger(graph, "tc-graph");
      });
    }
    const contextId = ev.kind === "context" ? ev.data.id : ev.data.context_id;
    const panel = document.getElementById("inspector-state");
    const inspected = panel && panel.closest("[data-context]");
    if (contextId && inspected && inspected.dataset.context === contextId) {
      soon("inspector", 600, function () {
        const current = document.getElementById("inspector-state");
        if (current && window.htmx) window.htmx.trigger(current, "tc-refresh");
      });
    }
    if (ev.kind === "task" && root.dataset.taskId === ev.data.id && !("ended" in root.dataset) && FINAL.has(ev.data.status)) {
      // This page's task ended: show its final state (phase, outcome, actions) unless the
      // operator is typing somewhere.
      if (!dirty(document.body)) soon("reload", 800, function () { window.location.reload(); });
    }
    if ((ev.kind === "confirmation" || ev.kind === "artifact") && root.dataset.taskId && ev.data.task_id === root.dataset.taskId) {
      // What the task waits for, or what it wrote, moves its phase: the badge reads it again.
      soon("phase", 500, function () {
        const phase = document.getElementById("task-phase");
        if (phase && window.htmx) window.htmx.trigger(phase, "tc-phase");
      });
    }
    if (ev.kind === "artifact" && ev.data.name === "outcome.json") {
      // The task's outcome was written: its panel reads it again (the task page).
      const outcome = document.getElementById("task-outcome");
      if (outcome && window.htmx) window.htmx.trigger(outcome, "tc-outcome");
    }
    document.dispatchEvent(new CustomEvent("tc:live", { detail: ev }));
  }

  function onFrame(frame) {
    if (frame.type === "state") {
      frame.fills.forEach(fill);
      setStatus(frame.resync ? gettext("live · resynced") : gettext("live"), "ok");
    } else if (frame.type === "events") {
      frame.events.forEach(function (ev) {
        if (ev.swap) swap(ev.swap);
        signal(ev);
      });
    } else if (frame.type === "behind") {
      setStatus(gettext("catching up…"), "warn");
    }
    if (frame.seq) {
      root.dataset.liveSeq = String(frame.seq);
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "ack", seq: frame.seq }));
    }
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    setStatus(attempt ? gettext("reconnecting…") : gettext("connecting…"), "wait");
    socket = new WebSocket(scheme + window.location.host + root.dataset.liveSocket);
    socket.onopen = function () {
      attempt = 0;
    };
    socket.onmessage = function (message) {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch (err) {
        return;
      }
      onFrame(frame);
    };
    socket.onclose = function (event) {
      socket = null;
      if (closedByPage) return;
      if (event.code === 4401) {
        // Signed out (here or in another tab of this session): nothing more to stream.
        setStatus(gettext("signed out · reload to log in"), "bad");
        return;
      }
      attempt += 1;
      // Exponential back-off with jitter, so a restarted server is not hit by every tab at once.
      const delay = Math.round(Math.min(30, 2 ** Math.min(attempt, 5)) * (0.5 + Math.random()) * 1000);
      setStatus(interpolate(gettext("offline · retrying in %s s"), [Math.round(delay / 1000)]), "bad");
      window.setTimeout(connect, delay);
    };
  }

  // A form with data-confirm-empty asks before it sends nothing but empty answers.
  document.addEventListener("submit", function (event) {
    const form = event.target instanceof HTMLFormElement ? event.target : null;
    if (!form || !form.dataset.confirmEmpty) return;
    const fields = form.querySelectorAll("textarea");
    const chosen = form.querySelector("input[type=radio]:checked");
    const empty = !chosen && Array.prototype.every.call(fields, function (field) { return !field.value.trim(); });
    if (fields.length && empty && !window.confirm(form.dataset.confirmEmpty)) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    const target = event.target instanceof Element ? event.target : null;
    if (target && target.closest("[data-close-inspector]")) {
      const box = document.getElementById("inspector");
      if (box) box.innerHTML = "";
    }
  });
  // An agent's detail, asked for with "Inspect", comes into view and takes the focus (issue 32:
  // on the task page the panel sits below the cards, off screen at 1366x768).
  document.addEventListener("htmx:afterSwap", function (event) {
    const box = event.detail && event.detail.target;
    if (!box || box.id !== "inspector" || !box.firstElementChild) return;
    box.setAttribute("tabindex", "-1");
    box.scrollIntoView({ block: "start" });
    box.focus({ preventScroll: true });
  });
  window.addEventListener("pagehide", function () {
    closedByPage = true;
    if (socket) socket.close();
  });
  connect();
})();
