// The livetable supervisor console's page: the wall of tables, the pause queue and the
// supervisor's actions, on the console's HTTP API (/api/...) and its event stream.
//
// Every string that comes from a table (ids, messages, reasons, account names, cards) is put
// into the page as text (textContent, text nodes, attribute values): never as HTML.
"use strict";

(() => {
  // --- constants -----------------------------------------------------------------------------

  const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
  const SUIT_NAME = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
  const RANK_NAME = {
    A: "ace", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
    9: "nine", T: "ten", J: "jack", Q: "queen", K: "king",
  };
  const RANKS = "A23456789TJQK";
  const SUITS = "SHDC";
  // The wall's order, as the server sorts /api/tables: most urgent first.
  const STATUS_RANK = { paused: 0, offline: 1, stale: 2, unknown: 3, running: 4 };
  const STATUS_WORD = {
    paused: "PAUSED", offline: "OFFLINE", stale: "STALE", unknown: "UNKNOWN", running: "RUNNING",
  };
  // A running table waiting for a shuffle deals nothing: its badge says so, not RUNNING.
  const NO_SHOE_WORD = "NO SHOE";
  // How long a pause resolved from this page stays in the queue, with the table's answer.
  const RESOLVED_SHOWN_MS = 15000;
  const RECONNECT_MS = 2000;
  // How long a table's answer stays beside the control that got it.
  const ANSWER_SHOWN_MS = 120000;
  // A new pause clears the answers shown before it, except one that came just before it:
  // that one is likely its cause (a pause asked here, a card accepted within a pause), and
  // its table's state can reach the page a moment after the answer.
  const ANSWER_CAUSE_MS = 1500;
  // The announcer keeps the last few pauses it said (a screen reader reads each as it comes).
  const ANNOUNCED_KEPT = 5;
  const TITLE = "livetable console";
  // Where a page whose session ended goes: the sign-in page, saying why.
  const SIGNED_OUT_URL = "/signin?ended=1";

  // --- the page's state ----------------------------------------------------------------------

  const app = {
    session: null, // /api/session
    tiles: new Map(), // table id -> Tile
    clockOffset: 0, // server time.time() minus this browser's, in seconds
    link: { up: true, why: "" },
    streamUp: false,
    answers: new Map(), // `${table}|${slot}` -> {ok, text}
    pending: new Set(), // `${table}|${slot}` while a request is on its way
    resolved: new Map(), // table -> {pause, until}: resolved here, still shown in the queue
    seenPauses: new Set(), // pause keys already known (no beep for them)
    selected: null, // the table selected in the pause queue
    // Chosen by the supervisor (keys, a click), or the queue's head by default. The default
    // follows the head: a pause older than the selected one can reach this page after it
    // (each table's tile comes on its own), and the oldest is what the keys act on first.
    selectedByHand: false,
    openRecent: new Set(), // tables whose "recent events" list is open
    lastRound: new Map(), // table -> the last round id seen in its state
    sound: false,
    audio: null,
    beeps: 0,
    streamTiles: 0, // tiles the event stream brought, counted
    streamTileAt: new Map(), // table -> that count at its last tile from the stream
  };

  // --- small helpers -------------------------------------------------------------------------

  /** An element: props are attributes (testid -> data-testid, on* -> listeners); children
   * are nodes or strings, which become text nodes (never parsed as HTML). */
  function h(tag, props, ...children) {
    const element = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") element.className = value;
      else if (key === "testid") element.setAttribute("data-testid", value);
      else if (key.startsWith("on") && typeof value === "function") {
        element.addEventListener(key.slice(2), value);
      } else if (key === "disabled") element.disabled = Boolean(value);
      else element.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      element.append(child instanceof Node ? child : String(child));
    }
    return element;
  }

  const byTestId = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);
  const serverNow = () => Date.now() / 1000 + app.clockOffset;
  const isSupervisor = () => app.session !== null && app.session.role === "supervisor";

  function clock(at) {
    if (at === null || at === undefined) return "?";
    return new Date(at * 1000).toLocaleTimeString([], { hour12: false });
  }

  function day(at) {
    if (at === null || at === undefined) return "?";
    return new Date(at * 1000).toLocaleDateString([], { year: "numeric", month: "short", day: "numeric" });
  }

  function seconds(value) {
    if (value < 60) return `${value.toFixed(1)} s`;
    if (value < 3600) return `${Math.floor(value / 60)} min ${Math.floor(value % 60)} s`;
    return `${Math.floor(value / 3600)} h ${Math.floor((value % 3600) / 60)} min`;
  }

  function rankText(rank) {
    return rank === "T" ? "10" : rank;
  }

  function cardName(card) {
    return `${RANK_NAME[card[0]] || card[0]} of ${SUIT_NAME[card[1]] || card[1]}`;
  }

  /** "KH", "kh", "10h", " 10 H ", "K♥" -> "KH"; anything else -> null. */
  function parseCard(text) {
    let compact = String(text).replace(/\s+/g, "").toUpperCase();
    for (const [suit, symbol] of Object.entries(SUIT_SYMBOL)) {
      compact = compact.replace(symbol, suit);
    }
    const match = /^(10|[2-9TJQKA])([SHDC])$/.exec(compact);
    if (!match) return null;
    return (match[1] === "10" ? "T" : match[1]) + match[2];
  }

  /** A small card face: rank and suit symbol, red for hearts and diamonds; null is the
   * hole card, drawn face down. */
  function cardFace(card) {
    if (card === null || card === undefined) {
      return h("span", { class: "card back", testid: "card-back", title: "face down" },
        h("span", { class: "card-back-pattern", "aria-hidden": "true" }));
    }
    if (typeof card !== "string" || !/^[2-9TJQKA][SHDC]$/.test(card)) {
      // Not a card as the API writes them: shown as it came, as text, marked unknown.
      return h("span", { class: "card unknown", testid: "card", "data-card": String(card), title: `unknown card ${card}` },
        h("span", { class: "card-rank" }, "?"), h("span", { class: "card-suit" }, String(card).slice(0, 3)));
    }
    const rank = card[0];
    const suit = card[1];
    const colour = suit === "H" || suit === "D" ? "red" : "black";
    return h("span", {
      class: `card ${colour}`, testid: "card", "data-card": card, title: cardName(card),
    },
    h("span", { class: "card-rank" }, rankText(rank)),
    h("span", { class: "card-suit" }, SUIT_SYMBOL[suit] || suit));
  }

  function cards(list) {
    return h("span", { class: "cards" }, (list || []).map(cardFace));
  }

  function pauseKey(table, pause) {
    return `${table}|${pause.since}|${pause.reason}`;
  }

  // --- the HTTP API --------------------------------------------------------------------------

  async function getJson(path) {
    const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
    if (response.status === 401) {
      window.location.assign(SIGNED_OUT_URL);
      throw new Error("signed out");
    }
    if (!response.ok) {
      // The console's own words when it gives them ({"ok": false, "message": ...}).
      let words = `HTTP ${response.status}`;
      try {
        const body = await response.json();
        if (body && body.message) words = `${body.message} (HTTP ${response.status})`;
      } catch (error) {
        // not JSON: the status says enough
      }
      throw new Error(words);
    }
    return response.json();
  }

  /** A command to a table through the console: the table's answer, normalised to
   * {ok, code, message}. */
  async function sendCommand(table, command, args) {
    let response;
    try {
      response = await fetch(`/api/tables/${encodeURIComponent(table)}/request`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": app.session.csrf },
        body: JSON.stringify({ command, args: args || {} }),
      });
    } catch (error) {
      return { ok: false, code: "network", message: `the console did not answer (${error})` };
    }
    if (response.status === 401) {
      window.location.assign(SIGNED_OUT_URL);
      return { ok: false, code: "signed_out", message: "the session ended: sign in again" };
    }
    let body = null;
    try {
      body = await response.json();
    } catch (error) {
      body = null;
    }
    if (body === null || typeof body !== "object") {
      return { ok: false, code: `http_${response.status}`, message: `HTTP ${response.status}` };
    }
    const code = body.code || (body.error && body.error.code) || (body.ok ? "" : "error");
    const message = body.message || (body.error && body.error.message) || "";
    return { ok: Boolean(body.ok), code, message };
  }

  /** Send, showing "waiting" then the table's answer in `slot` (where the supervisor acted). */
  async function act(table, slot, command, args, onDone) {
    const key = `${table}|${slot}`;
    app.pending.add(key);
    app.answers.set(key, { ok: null, text: `${command}: waiting for the table's answer`, at: Date.now() });
    render();
    const answer = await sendCommand(table, command, args);
    app.pending.delete(key);
    const words = answer.message || (answer.ok ? "done" : "refused");
    const said = answer.ok ? `${table} ${command}: ${words}` : `${table} ${command} ${answer.code}: ${words}`;
    app.answers.set(key, { ok: answer.ok, text: `${clock(Date.now() / 1000)} ${said}`, at: Date.now() });
    if (onDone) onDone(answer);
    render();
    return answer;
  }

  /** A new pause on `table`: the answers shown for it are of a moment past (one still
   * awaited, or one that came just now, stays). */
  function forgetAnswers(table) {
    for (const slot of ["actions", "queue"]) {
      const key = `${table}|${slot}`;
      const answer = app.answers.get(key);
      if (answer && answer.ok !== null && Date.now() - answer.at > ANSWER_CAUSE_MS) app.answers.delete(key);
    }
  }

  /** The table's answer shown in `slot`, if any (one shown long enough is forgotten). */
  function currentAnswer(table, slot) {
    const key = `${table}|${slot}`;
    const answer = app.answers.get(key);
    if (answer && answer.ok !== null && Date.now() - answer.at > ANSWER_SHOWN_MS) {
      app.answers.delete(key);
      return undefined;
    }
    return answer;
  }

  function answerLine(table, slot) {
    const answer = currentAnswer(table, slot);
    const cls = answer ? (answer.ok === null ? "waiting" : answer.ok ? "ok" : "refused") : "";
    return h("p", {
      class: `answer ${cls}`, testid: "answer", "data-ok": answer ? String(answer.ok) : null,
      "aria-live": "polite",
    }, answer ? answer.text : "");
  }

  // --- why a control is disabled ---------------------------------------------------------------

  function whyNotReachable(tile) {
    if (!app.link.up || tile.status === "unknown") return "the console's link to the broker is down";
    if (!app.streamUp) return "no connection to the console";
    if (tile.status === "offline" || tile.availability === "offline") {
      return "the table is offline: nothing would reach it";
    }
    if (!tile.state) return "no state from this table yet";
    return null;
  }

  /** Why `command` cannot be sent to this table now, or null if it can. */
  function whyNot(tile, command) {
    const unreachable = whyNotReachable(tile);
    if (unreachable) return unreachable;
    const state = tile.state;
    const phase = state.phase;
    for (const slot of ["actions", "queue"]) {
      if (app.pending.has(`${tile.table}|${slot}`)) return "waiting for the table's answer";
    }
    switch (command) {
      case "pause":
        // Pauses nest: a supervisor's pause asked while the table is paused is taken, and
        // holds until a supervisor lifts it (a table whose journal is older refuses it).
        return null;
      case "cancel":
        return state.round ? null : "no round is in play";
      case "end_shoe":
        if (!state.shoe || state.shoe.id === null || phase === "AWAITING_SHUFFLE") {
          return "no shoe is in play";
        }
        if (state.round) return "a round is in play: cancel it first";
        if (!["SHOE_READY", "BURN_REVEAL", "BURNING"].includes(phase)) {
          return `the shoe cannot be ended now (${phase})`;
        }
        return null;
      case "new_shoe":
        if (state.round) return "a round is in play: cancel it first";
        if (!["AWAITING_SHUFFLE", "SHOE_READY"].includes(phase)) {
          return `a new shoe is declared between rounds or awaiting a shuffle (now ${phase})`;
        }
        return null;
      default:
        return phase === "PAUSED" ? null : "the table is not paused";
    }
  }

  /** Why the pause's `resolution` would be refused now, or null if it can be sent: the
   * table refuses every resume while its shoe is offline, and an accept unless the pause
   * returns to a deal (a card expected where the held one would go). */
  function whyNotResolve(tile, resolution) {
    const why = whyNot(tile, "resume");
    if (why) return why;
    const state = tile.state;
    if (state.devices && state.devices.shoe_online === false) return "the shoe is offline: bring it back first";
    const pause = state.pause || {};
    if (resolution === "accept" && pause.resume_to !== undefined && pause.resume_to !== "DEALING") {
      return "no card is expected now: burn it";
    }
    return null;
  }

  function actionButton(tile, command, label, testid, onClick) {
    const why = whyNot(tile, command);
    return h("button", {
      type: "button", testid, disabled: why !== null, title: why || label,
      onclick: why === null ? onClick : null,
    }, label);
  }

  // --- a tile ----------------------------------------------------------------------------------

  function shoeLine(state) {
    const shoe = state.shoe || {};
    if (shoe.id === null || shoe.id === undefined) return "no shoe: awaiting a shuffle";
    const parts = [`shoe ${shoe.id}`, `round ${shoe.round_number}`, `${shoe.cards_left} cards left`];
    if (shoe.cut_card_seen) {
      parts.push(shoe.final_round ? `cut card out: last round ${shoe.final_round}` : "cut card out");
    } else {
      parts.push("cut card not seen");
    }
    return parts.join(" \u00b7 ");
  }

  function total(value, soft) {
    if (value === null || value === undefined) return "";
    return soft ? `soft ${value}` : String(value);
  }

  function handRow(label, handCards, totalText, extra) {
    return h("div", { class: "hand", testid: "hand", "data-position": label },
      h("span", { class: "hand-label" }, label),
      cards(handCards),
      h("span", { class: "hand-total", testid: "hand-total" }, totalText),
      extra ? h("span", { class: "hand-extra" }, extra) : null);
  }

  function handsView(state) {
    const round = state.round;
    if (!round) return null;
    const view = round.view;
    if (!view) {
      return h("div", { class: "hands", testid: "tile-hands" },
        h("p", { class: "betting" }, state.phase === "BETTING"
          ? `round ${round.id}: betting open` : `round ${round.id}: no card dealt yet`));
    }
    const rows = [];
    if (view.game === "baccarat") {
      rows.push(handRow("player", view.player, String(view.player_total ?? "")));
      rows.push(handRow("banker", view.banker, String(view.banker_total ?? "")));
      if (view.complete && view.winner) rows.push(h("p", { class: "winner" }, `winner: ${view.winner}`));
    } else if (view.dealer) {
      rows.push(handRow("dealer", view.dealer.cards, total(view.dealer.total, view.dealer.soft)));
      if (view.player) {
        rows.push(handRow("players", view.player.cards,
          total(view.player.sequence_total ?? view.player.initial_total, view.player.soft)));
      }
      for (const box of view.boxes || []) {
        (box.hands || []).forEach((hand, index) => {
          const label = box.hands.length > 1 ? `box${box.box}.${index + 1}` : `box${box.box}`;
          const extra = [hand.state !== "playing" ? hand.state : "",
            hand.doubled ? "doubled" : "", box.insurance ? "insured" : ""]
            .filter(Boolean).join(", ");
          rows.push(handRow(label, hand.cards, total(hand.total, hand.soft), extra));
        });
      }
    }
    return h("div", { class: "hands", testid: "tile-hands" }, h("p", { class: "round-id" }, `round ${round.id}`), rows);
  }

  function awaitingText(awaiting) {
    if (!awaiting) return "nothing";
    switch (awaiting.what) {
      case "bets": return "bets";
      case "card": return `card to ${awaiting.position}${awaiting.face_down ? " (face down)" : ""}`;
      case "decision": {
        const options = (awaiting.options || []).join("/");
        return `${awaiting.kind} decision, box ${awaiting.box} hand ${awaiting.hand} (${options}, default ${awaiting.default})`;
      }
      case "camera": return `the camera to read the card at ${awaiting.position}`;
      case "reveal": return "the shoe's first card to be revealed";
      case "burn": return `${awaiting.cards} card(s) to burn`;
      case "supervisor": return "a supervisor";
      case "new_shoe": return "a shuffle and a new shoe";
      case "round_request": return "the next round to be opened";
      default: return String(awaiting.what);
    }
  }

  function awaitingView(state) {
    const awaiting = state.awaiting;
    const deadline = state.round ? state.round.deadline : null;
    return h("p", { class: "awaiting", testid: "tile-awaiting" },
      h("span", { class: "label" }, "awaiting "),
      awaitingText(awaiting),
      deadline !== null && deadline !== undefined && ["BETTING", "DECIDING"].includes(state.phase)
        ? h("span", { class: "countdown", testid: "tile-countdown", "data-deadline": String(deadline) }, "")
        : null);
  }

  /** A device's line; `tableOffline`: its table is offline, so what it last said of the
   * device is no news of it now. */
  function device(name, online, testid, tableOffline) {
    if (tableOffline) {
      return h("span", { class: "device none", testid, "data-online": "unknown" },
        h("span", { class: "dot", "aria-hidden": "true" }), `${name} unknown: the table is offline`);
    }
    const word = online === null || online === undefined ? "not reporting" : online ? "online" : "offline";
    const cls = online === null || online === undefined ? "none" : online ? "up" : "down";
    return h("span", { class: `device ${cls}`, testid, "data-online": String(online) },
      h("span", { class: "dot", "aria-hidden": "true" }), `${name} ${word}`);
  }

  function pauseView(tile) {
    const pause = tile.state && tile.state.pause;
    if (!pause) return null;
    const by = pause.by || tile.paused_by;
    // The reason code is for programs (data-reason); a person reads the table's message.
    return h("div", { class: "pause-box", testid: "tile-pause", "data-reason": pause.reason },
      h("p", { class: "pause-word" }, "PAUSED"),
      h("p", { testid: "pause-message" }, pause.message),
      h("p", null, h("span", { class: "label" }, "since "),
        h("span", { testid: "pause-since", "data-since": String(pause.since ?? "") }, clock(pause.since)),
        h("span", { class: "ago", "data-ago": String(pause.since ?? "") }, ""),
        h("span", { class: "label" }, " by "),
        h("span", { testid: "pause-by" }, by ? by : "the table (an anomaly)")),
      pausesInEffect(tile.state));
  }

  /** Every pause in effect when there are several (a supervisor's, and anomalies during
   * it): each with its reason, who set it and since when. A supervisor's holds the table
   * until a plain resume, whatever is resolved within it. */
  function pausesInEffect(state) {
    const pauses = (state && state.pauses) || [];
    if (pauses.length < 2) return null;
    return h("ul", { class: "pauses", testid: "pauses" }, pauses.map((pause) =>
      h("li", { testid: "pauses-item", "data-reason": pause.reason, "data-by": pause.by || "" },
        h("span", { testid: "pauses-message" }, pause.message), " \u00b7 ",
        h("span", { testid: "pauses-by" }, pause.by ? `paused by ${pause.by}` : "the table (an anomaly)"),
        ` since ${clock(pause.since)}`)));
  }

  function recentView(tile) {
    const recent = tile.recent || [];
    if (!recent.length) return null;
    const details = h("details", { class: "recent", testid: "tile-recent" },
      h("summary", null, `last ${recent.length} events`),
      // A region that scrolls is reachable by keyboard (tabindex) and named for it.
      h("ol", { tabindex: "0", "aria-label": `${tile.table}: last events` }, recent.slice().reverse().map((event) =>
        h("li", null, h("span", { class: "seq" }, `#${event.seq} ${clock(event.at)} `), eventSummary(event)))));
    details.open = app.openRecent.has(tile.table);
    details.addEventListener("toggle", () => {
      if (details.open) app.openRecent.add(tile.table);
      else app.openRecent.delete(tile.table);
    });
    return details;
  }

  function tileActions(tile) {
    const state = tile.state || {};
    const round = state.round;
    const shoeId = state.shoe ? state.shoe.id : null;
    return h("div", { class: "actions", testid: "tile-actions" },
      actionButton(tile, "pause", "Pause\u2026", "action-pause", () => askPause(tile.table)),
      actionButton(tile, "cancel", round ? `Cancel round ${round.id}\u2026` : "Cancel round\u2026",
        "action-cancel", () => askCancel(tile.table)),
      actionButton(tile, "end_shoe", "End shoe\u2026", "action-end-shoe", () => askEndShoe(tile.table, shoeId)),
      actionButton(tile, "new_shoe", "New shoe\u2026", "action-new-shoe", () => askNewShoe(tile.table, shoeId)));
  }

  function renderTile(tile) {
    const state = tile.state;
    const status = tile.status || "unknown";
    const tableOffline = status === "offline" || tile.availability === "offline";
    const noShoe = status === "running" && state && state.phase === "AWAITING_SHUFFLE";
    const badge = noShoe ? "no-shoe" : status;
    const header = h("header", { class: "tile-head", testid: "tile-head" },
      h("h3", { testid: "tile-id" }, tile.table),
      h("span", { class: `status-word status-${badge}`, testid: "tile-status", "data-badge": badge },
        noShoe ? NO_SHOE_WORD : STATUS_WORD[status] || status.toUpperCase()),
      state ? h("span", { class: "game", testid: "tile-game" }, state.game + (state.variant ? ` (${state.variant})` : "")) : null,
      state ? h("span", { class: "phase", testid: "tile-phase" }, state.phase) : null);
    const body = [];
    if (status === "offline") {
      body.push(h("p", { class: "offline-word", testid: "tile-offline" },
        "OFFLINE: the table's daemon is not connected. Its last state is shown below."));
    }
    if (status === "unknown") {
      body.push(h("p", { class: "unknown-word", testid: "tile-unknown" }, "UNKNOWN: the console cannot hear the broker."));
    }
    if (status === "stale") {
      body.push(h("p", { class: "stale-word", testid: "tile-stale" },
        "STALE: online, but nothing heard from it for a while during a round."));
    }
    if (state) {
      body.push(pauseView(tile));
      body.push(h("p", { class: "shoe", testid: "tile-shoe" }, shoeLine(state)));
      body.push(handsView(state));
      body.push(awaitingView(state));
      body.push(h("p", { class: "devices", testid: "tile-devices" },
        device("shoe", state.devices ? state.devices.shoe_online : null, "device-shoe", tableOffline),
        device("camera", state.devices ? state.devices.camera_online : null, "device-camera", tableOffline)));
      if (tile.dealer && tile.dealer.message) {
        body.push(h("p", { class: "dealer-line", testid: "tile-dealer" },
          h("span", { class: "label" }, "dealer: "), tile.dealer.message));
      }
    } else {
      body.push(h("p", { class: "hint", testid: "tile-no-state" }, "No state from this table yet."));
    }
    body.push(h("p", { class: "age", testid: "tile-age", "data-last": String(tile.last_message_at ?? "") }, ""));
    body.push(recentView(tile));
    if (isSupervisor()) {
      body.push(tileActions(tile));
      body.push(answerLine(tile.table, "actions"));
    }
    body.push(h("div", { class: "views", testid: "tile-views" },
      h("button", { type: "button", testid: "action-history", onclick: () => openHistory(tile.table) }, "Round history\u2026"),
      h("button", { type: "button", testid: "action-audit", onclick: () => openAudit(tile.table) }, "Audit\u2026")));
    return h("article", {
      class: `tile status-${status}`, testid: `tile-${tile.table}`, "data-table": tile.table,
      "data-status": status, "data-phase": state ? state.phase : "",
    }, header, body);
  }

  // --- the pause queue -------------------------------------------------------------------------

  /** The resolutions a pause offers: exactly what its `needs` ask for (a plain resume when
   * they ask for nothing). Each: [resolution, label, key, testid]. */
  function choicesFor(pause) {
    const needs = pause.needs || [];
    const choices = [];
    const add = (choice) => {
      if (!choices.some((known) => known[3] === choice[3])) choices.push(choice);
    };
    for (const need of needs) {
      if (need.includes("accept or burn")) {
        add(["accept", "Accept", "a", "resolve-accept"]);
        add(["burn", "Burn", "b", "resolve-burn"]);
      } else if (need.startsWith("enter_card for")) {
        add(["enter_card", "Enter the card\u2026", "e", "resolve-enter-card"]);
      } else if (need.includes("no_cards_drawn")) {
        add(["no_cards_drawn", "No cards drawn", "n", "resolve-no-cards-drawn"]);
        add(["enter_card", "Enter a card that was drawn\u2026", "e", "resolve-enter-card"]);
      }
    }
    if (needs.length === 0) {
      add(["", "Resume", "r", "resolve-resume"]);
      // A dealer_idle pause: the card on the felt that the round does not show may be entered.
      if (pause.idle_gap) add(["enter_card", "Enter the card on the felt\u2026", "e", "resolve-enter-card"]);
    }
    return choices;
  }

  function pausedTables() {
    const paused = [...app.tiles.values()].filter((tile) => tile.state && tile.state.phase === "PAUSED" && tile.state.pause);
    const now = Date.now();
    for (const [table, entry] of app.resolved) {
      // Dropped when its time is up, or when the table paused again (another pause). The
      // same pause may still show for a moment: the answer can come before the tile.
      const again = paused.find((tile) => tile.table === table);
      if (entry.until < now || (again && pauseKey(table, again.state.pause) !== entry.key)) {
        app.resolved.delete(table);
      }
    }
    const since = (tile) => (tile.state.pause.since ?? Infinity);
    paused.sort((a, b) => since(a) - since(b) || a.table.localeCompare(b.table));
    return paused;
  }

  function resolve(table, resolution) {
    const tile = app.tiles.get(table);
    if (!tile || !tile.state || !tile.state.pause) return;
    if (whyNotResolve(tile, resolution)) return;
    if (resolution === "enter_card") {
      openPicker(table);
      return;
    }
    const pause = tile.state.pause;
    const args = resolution ? { resolution } : {};
    act(table, "queue", "resume", args, (answer) => {
      if (answer.ok) app.resolved.set(table, { pause, key: pauseKey(table, pause), until: Date.now() + RESOLVED_SHOWN_MS });
    });
  }

  function queueItem(tile, selected) {
    const pause = tile.state.pause;
    const choices = choicesFor(pause);
    const buttons = isSupervisor()
      ? h("div", { class: "choices", testid: "queue-choices" }, choices.map(([resolution, label, key, testid]) => {
        const why = whyNotResolve(tile, resolution);
        return h("button", {
          type: "button", testid, class: "primary", disabled: why !== null, title: why || `${label} (key ${key})`,
          "data-resolution": resolution,
          onclick: why === null ? () => { select(tile.table); resolve(tile.table, resolution); } : null,
        }, label, " ", h("kbd", null, key));
      }))
      : null;
    return h("li", {
      class: `queue-item${selected ? " selected" : ""}`, testid: `queue-item-${tile.table}`,
      "data-table": tile.table, "data-state": "paused", "data-reason": pause.reason, "aria-current": selected ? "true" : null,
      onclick: () => { if (app.selected !== tile.table || !app.selectedByHand) { select(tile.table); render(); } },
    },
    h("p", { class: "queue-title", testid: "queue-title" }, h("strong", null, tile.table), " ",
      h("span", { class: "status-word status-paused" }, "PAUSED"), " ",
      tile.status === "offline" ? h("span", { class: "status-word status-offline" }, " OFFLINE") : null),
    h("p", { testid: "queue-message" }, pause.message),
    h("p", { class: "meta", testid: "queue-meta" }, `since ${clock(pause.since)}`,
      h("span", { class: "ago", "data-ago": String(pause.since ?? "") }, ""),
      ` by ${pause.by || tile.paused_by || "the table (an anomaly)"}`,
      tile.state.round ? ` \u00b7 round ${tile.state.round.id}` : ""),
    pausesInEffect(tile.state),
    pause.needs && pause.needs.length
      ? h("ul", { class: "needs", testid: "queue-needs" }, pause.needs.map((need) => h("li", { testid: "queue-need" }, need)))
      : h("p", { class: "needs none", testid: "queue-needs" }, heldBy(tile.state)
        ? `nothing to resolve: a plain resume lifts the pause of ${heldBy(tile.state)}`
        : "nothing to resolve: a plain resume will do"),
    buttons,
    isSupervisor() ? answerLine(tile.table, "queue") : null);
  }

  /** Who holds the table paused (the supervisors whose pauses are in effect), or "". */
  function heldBy(state) {
    const pauses = (state && state.pauses) || [];
    return pauses.filter((pause) => pause.reason === "supervisor" && pause.by)
      .map((pause) => pause.by).join(", ");
  }

  function resolvedItem(table, entry) {
    return h("li", { class: "queue-item resolved", testid: `queue-item-${table}`, "data-table": table, "data-state": "resolved" },
      h("p", { class: "queue-title", testid: "queue-title" }, h("strong", null, table), " resumed (was: ", entry.pause.message || "paused", ")"),
      answerLine(table, "queue"));
  }

  /** The supervisor selects a pause in the queue: it stays selected while it is paused. */
  function select(table) {
    app.selected = table;
    app.selectedByHand = true;
  }

  function renderQueue() {
    const paused = pausedTables();
    if (!app.selectedByHand || !paused.some((tile) => tile.table === app.selected)) {
      app.selected = paused.length ? paused[0].table : null;
      app.selectedByHand = false;
    }
    const list = byTestId("queue-items");
    const items = paused.map((tile) => queueItem(tile, tile.table === app.selected));
    for (const [table, entry] of app.resolved) {
      if (!paused.some((tile) => tile.table === table)) items.push(resolvedItem(table, entry));
    }
    patchKeyed(list, items);
    byTestId("queue-count").textContent = paused.length ? `(${paused.length})` : "";
    byTestId("queue-empty").hidden = paused.length > 0;
  }

  // --- the wall --------------------------------------------------------------------------------

  function sortedTiles() {
    return [...app.tiles.values()].sort((a, b) =>
      (STATUS_RANK[a.status] ?? 9) - (STATUS_RANK[b.status] ?? 9) || a.table.localeCompare(b.table));
  }

  // --- redrawing without disturbing a click --------------------------------------------------
  //
  // A redraw builds fresh elements, then keeps every existing one whose fresh version is the
  // same (by its markup when built, before tick() writes live text into it): a button the
  // supervisor is pressing stays the same element unless what it does changed. Tiles and
  // queue items are matched by table; inside them, each section is kept or replaced whole
  // (so a replaced button always comes with its own listener).

  const signatures = new WeakMap();

  /** `node` with its signature, and its sections' (what reconcile compares next time). */
  function signed(node) {
    signatures.set(node, node.outerHTML);
    for (const section of node.children) signatures.set(section, section.outerHTML);
    return node;
  }

  function copyAttributes(target, source) {
    for (const { name } of [...target.attributes]) {
      if (!source.hasAttribute(name)) target.removeAttribute(name);
    }
    for (const { name, value } of [...source.attributes]) {
      if (target.getAttribute(name) !== value) target.setAttribute(name, value);
    }
  }

  /** `existing` made to show `fresh` (a tile or a queue item): kept, patched section by
   * section, or `fresh` itself. */
  function reconcile(existing, fresh) {
    const signature = fresh.outerHTML;
    if (!existing || existing.tagName !== fresh.tagName) return signed(fresh);
    if (signatures.get(existing) === signature) return existing;
    copyAttributes(existing, fresh);
    // Sections are matched by their data-testid (else their tag and place), so one that
    // appears or goes does not make every later one look changed.
    const keyOf = (node, index) => node.getAttribute("data-testid") || `${node.tagName}#${index}`;
    const old = new Map([...existing.children].map((node, index) => [keyOf(node, index), node]));
    const sections = [...fresh.children].map((section, index) => {
      const before = old.get(keyOf(section, index));
      if (before && before.tagName === section.tagName && signatures.get(before) === section.outerHTML) return before;
      return signed(section);
    });
    replaceIfDifferent(existing, sections);
    signatures.set(existing, signature);
    return existing;
  }

  /** Put `nodes` in `parent` in that order, touching nothing that is already in place. */
  function replaceIfDifferent(parent, nodes) {
    nodes.forEach((node, index) => {
      const here = parent.children[index];
      if (here !== node) {
        if (here) parent.insertBefore(node, here);
        else parent.append(node);
      }
    });
    while (parent.children.length > nodes.length) parent.lastElementChild.remove();
  }

  /** Reconcile the keyed children of `parent` (tiles, queue items) with fresh ones. */
  function patchKeyed(parent, fresh) {
    const byKey = new Map([...parent.children].map((node) => [node.getAttribute("data-testid"), node]));
    const nodes = fresh.map((node) => reconcile(byKey.get(node.getAttribute("data-testid")), node));
    replaceIfDifferent(parent, nodes);
  }

  /** For `livetable bench console`: when a benchmark puts an array in
   * `window.livetableRenders`, each tile drawn with a new state is noted there as
   * {table, seq: the state's journal.seq, at: Date.now() right after the wall was patched}.
   * Nothing is kept
   * otherwise. */
  const drawnSeq = new Map();
  function stampDrawn(tiles) {
    const renders = window.livetableRenders;
    if (!Array.isArray(renders)) return;
    const at = Date.now();
    for (const tile of tiles) {
      // The journal's head, not `seq`: a state that changed no event (a timer, say) keeps
      // the last event's seq, and is another state all the same.
      const seq = tile.state && tile.state.journal ? tile.state.journal.seq : null;
      if (seq === null || drawnSeq.get(tile.table) === seq) continue;
      drawnSeq.set(tile.table, seq);
      renders.push({ table: tile.table, seq, at });
    }
  }

  let renderQueued = false;
  /** Redraw the wall and the queue (at most once per animation frame). */
  function render() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      renderNow();
    });
  }

  function renderNow() {
    const t0 = performance.now(); const d0 = Date.now();
    try { renderNow2(); } finally { if (window.__prof) window.__prof.render.push([d0, performance.now() - t0]); }
  }
  /** Everything a tile's drawing depends on besides the clock (which tick() writes). A tile
   * whose inputs are all the same objects as when it was last drawn is not built again: with
   * twenty tables a state comes every few milliseconds, and rebuilding the whole wall for each
   * kept the page's one thread too busy to take the next message. */
  function tileInputs(tile) {
    return [
      tile, app.session, app.link.up, app.streamUp, app.openRecent.has(tile.table),
      app.pending.has(`${tile.table}|actions`), app.pending.has(`${tile.table}|queue`),
      currentAnswer(tile.table, "actions"),
    ];
  }

  const drawnFrom = new Map(); // table -> [its tileInputs when drawn, its element]
  function sameInputs(a, b) {
    return a.length === b.length && a.every((value, index) => value === b[index]);
  }

  /** The tiles' elements in this order: each kept as drawn if its inputs did not change. */
  function patchWall(wall, tiles) {
    const byKey = new Map([...wall.children].map((node) => [node.getAttribute("data-testid"), node]));
    const nodes = tiles.map((tile) => {
      const inputs = tileInputs(tile);
      const drawn = drawnFrom.get(tile.table);
      const existing = byKey.get(`tile-${tile.table}`);
      if (drawn && drawn[1] === existing && sameInputs(drawn[0], inputs)) return existing;
      const node = reconcile(existing, renderTile(tile));
      drawnFrom.set(tile.table, [inputs, node]);
      return node;
    });
    for (const table of [...drawnFrom.keys()]) if (!app.tiles.has(table)) drawnFrom.delete(table);
    replaceIfDifferent(wall, nodes);
  }

  function renderNow2() {
    const wall = byTestId("wall");
    if (!wall) return;
    // Keep the keyboard focus on the same control of the same tile or queue item.
    const active = document.activeElement;
    const holder = active && active.closest ? active.closest("[data-table]") : null;
    const focused = holder && active.dataset.testid
      ? { holder: holder.dataset.testid, control: active.dataset.testid } : null;
    const tiles = sortedTiles();
    patchWall(wall, tiles);
    stampDrawn(tiles);
    byTestId("wall-count").textContent = tiles.length ? `(${tiles.length})` : "";
    byTestId("wall-empty").hidden = tiles.length > 0;
    renderQueue();
    if (focused) {
      const again = [...document.querySelectorAll("[data-testid]")]
        .filter((element) => element.dataset.testid === focused.holder)
        .map((element) => [...element.querySelectorAll("[data-testid]")]
          .find((inner) => inner.dataset.testid === focused.control))
        .find(Boolean);
      if (again && !again.disabled) again.focus();
    }
    byTestId("banner-link").hidden = app.link.up;
    byTestId("banner-link-why").textContent = app.link.why ? `(${app.link.why})` : "";
    byTestId("banner-connection").hidden = app.streamUp;
    const paused = tiles.filter((tile) => tile.status === "paused").length;
    const title = paused ? `(${paused} paused) ${TITLE}` : TITLE;
    if (document.title !== title) document.title = title;
    document.body.dataset.stream = app.streamUp ? "up" : "down";
    document.body.dataset.link = app.link.up ? "up" : "down";
    tick();
  }

  /** The live parts: countdowns, ages. */
  function tick() {
    const now = serverNow();
    // Written only where the words change: an unchanged text written again still costs the
    // page a layout, five times a second for every tile.
    const write = (element, text) => { if (element.textContent !== text) element.textContent = text; };
    for (const element of document.querySelectorAll("[data-deadline]")) {
      const left = Number(element.dataset.deadline) - now;
      write(element, left > 0 ? ` ${seconds(left)} left` : " due now");
      element.classList.toggle("urgent", left < 3);
    }
    for (const element of document.querySelectorAll("[data-last]")) {
      const last = element.dataset.last;
      write(element, last === "" ? "no message yet" : `last message ${seconds(Math.max(0, now - Number(last)))} ago`);
    }
    for (const element of document.querySelectorAll("[data-ago]")) {
      const since = element.dataset.ago;
      write(element, since === "" ? "" : ` (${seconds(Math.max(0, now - Number(since)))} ago)`);
    }
  }

  /** A tile from the stream or from /api/tables. `live`: a pause this page has not seen
   * yet beeps (false for the page's first load: what is paused then is in the queue). A
   * pause seen before never beeps again, whatever comes again after a reconnect. */
  function applyTile(tile, live) {
    const pause = tile.state && tile.state.phase === "PAUSED" ? tile.state.pause : null;
    const before = app.tiles.get(tile.table);
    const pauseBefore = before && before.state && before.state.phase === "PAUSED" ? before.state.pause : null;
    if (pause && (!pauseBefore || pauseKey(tile.table, pauseBefore) !== pauseKey(tile.table, pause))) {
      forgetAnswers(tile.table);
    }
    if (pause) {
      const key = pauseKey(tile.table, pause);
      if (!app.seenPauses.has(key)) {
        app.seenPauses.add(key);
        if (live) {
          beep();
          announce(`Table ${tile.table} paused: ${pause.message || pause.reason}`);
        }
      }
    }
    if (tile.state && tile.state.round) app.lastRound.set(tile.table, tile.state.round.id);
    app.tiles.set(tile.table, tile);
  }

  async function reloadTables() {
    // A tile the stream brought while this snapshot was on its way is at least as new as
    // the snapshot's (the stream brings every later change too): the snapshot's older copy
    // must not overwrite it (a table killed meanwhile stayed RUNNING on the wall).
    const asked = app.streamTiles;
    const answer = await getJson("/api/tables");
    if (typeof answer.now === "number") app.clockOffset = answer.now - Date.now() / 1000;
    if (answer.link) app.link = answer.link;
    const seen = new Set();
    const reconnect = document.body.dataset.loaded === "true";
    for (const tile of answer.tables || []) {
      seen.add(tile.table);
      if ((app.streamTileAt.get(tile.table) || 0) > asked) continue;
      applyTile(tile, reconnect);
    }
    for (const table of [...app.tiles.keys()]) if (!seen.has(table)) app.tiles.delete(table);
    document.body.dataset.loaded = "true";
    render();
  }

  // --- the event stream ------------------------------------------------------------------------

  function connectStream() {
    const source = new EventSource("/api/stream");
    source.addEventListener("open", () => {
      app.streamUp = true;
      // The session may have changed meanwhile (ended for being idle: the wall goes on,
      // read-only); what changed while away comes with the reload: a pause that began
      // meanwhile beeps, one already beeped for does not.
      getJson("/api/session").then(showSession).then(reloadTables).catch(() => {});
      render();
    });
    source.addEventListener("hello", (message) => {
      const hello = JSON.parse(message.data);
      if (typeof hello.now === "number") app.clockOffset = hello.now - Date.now() / 1000;
    });
    source.addEventListener("tile", (message) => {
      const tile = JSON.parse(message.data);
      app.streamTiles += 1;
      app.streamTileAt.set(tile.table, app.streamTiles);
      applyTile(tile, true);
      render();
    });
    source.addEventListener("link", (message) => {
      app.link = JSON.parse(message.data);
      render();
    });
    source.addEventListener("error", () => {
      app.streamUp = false;
      render();
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error): a signed-out session goes to the sign-in page.
        fetch("/api/session", { credentials: "same-origin", cache: "no-store" })
          .then((response) => { if (response.status === 401) window.location.assign(SIGNED_OUT_URL); })
          .catch(() => {})
          .finally(() => setTimeout(connectStream, RECONNECT_MS));
      }
    });
  }

  // --- sound -----------------------------------------------------------------------------------

  function audioContext() {
    if (!app.audio) {
      const Context = window.AudioContext || window.webkitAudioContext;
      if (!Context) return null;
      app.audio = new Context();
    }
    if (app.audio.state === "suspended") app.audio.resume();
    return app.audio;
  }

  function playBeep() {
    const context = audioContext();
    if (!context) return;
    const start = context.currentTime;
    for (const offset of [0, 0.3]) {
      const oscillator = context.createOscillator();
      const gain = context.createGain();
      oscillator.type = "sine";
      oscillator.frequency.value = 880;
      gain.gain.setValueAtTime(0.0001, start + offset);
      gain.gain.exponentialRampToValueAtTime(0.3, start + offset + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, start + offset + 0.22);
      oscillator.connect(gain).connect(context.destination);
      oscillator.start(start + offset);
      oscillator.stop(start + offset + 0.25);
    }
  }

  /** Say `text` in the page's live region (a screen reader reads it out). */
  function announce(text) {
    const region = byTestId("announcer");
    if (!region) return;
    region.append(h("p", null, `${clock(serverNow())} ${text}`));
    while (region.childElementCount > ANNOUNCED_KEPT) region.firstElementChild.remove();
  }

  /** A new pause: beep if the supervisor opted in (counted for the tests in body[data-beeps]). */
  function beep() {
    if (!app.sound) return;
    app.beeps += 1;
    document.body.dataset.beeps = String(app.beeps);
    playBeep();
  }

  // --- dialogs ---------------------------------------------------------------------------------

  /** A confirmation: resolves to {reason} on OK, null on Back or Escape. */
  function confirmDialog({ title, lines, okLabel, reasonCaption, reasonRequired, reasonPlaceholder }) {
    const dialog = byTestId("confirm-dialog");
    const reason = byTestId("confirm-reason");
    const error = byTestId("confirm-error");
    byTestId("confirm-title").textContent = title;
    byTestId("confirm-text").replaceChildren(...lines.map((line) => h("p", null, line)));
    byTestId("confirm-ok").textContent = okLabel;
    byTestId("confirm-reason-label").hidden = reasonCaption === null;
    byTestId("confirm-reason-caption").textContent = reasonCaption || "";
    reason.value = "";
    reason.required = false; // checked below, with a message of our own
    reason.placeholder = reasonPlaceholder || "";
    error.hidden = true;
    return new Promise((done) => {
      const finish = (value) => {
        cleanup();
        if (dialog.open) dialog.close();
        done(value);
      };
      const onSubmit = (event) => {
        event.preventDefault();
        if (reasonRequired && !reason.value.trim()) {
          error.textContent = "A reason is needed.";
          error.hidden = false;
          reason.focus();
          return;
        }
        finish({ reason: reason.value.trim() });
      };
      const onBack = () => finish(null);
      const onCancel = (event) => { event.preventDefault(); finish(null); };
      const form = dialog.querySelector("form");
      const back = byTestId("confirm-back");
      function cleanup() {
        form.removeEventListener("submit", onSubmit);
        back.removeEventListener("click", onBack);
        dialog.removeEventListener("cancel", onCancel);
      }
      form.addEventListener("submit", onSubmit);
      back.addEventListener("click", onBack);
      dialog.addEventListener("cancel", onCancel);
      dialog.showModal();
      (reasonCaption !== null ? reason : byTestId("confirm-back")).focus();
    });
  }

  async function askPause(table) {
    const chosen = await confirmDialog({
      title: `Pause table ${table}`,
      lines: ["The table stops taking cards and decisions until a supervisor resumes it."],
      okLabel: "Pause the table",
      reasonCaption: "Reason (required, the journal keeps it)",
      reasonRequired: true,
      reasonPlaceholder: "e.g. spilled drink",
    });
    if (chosen) act(table, "actions", "pause", { reason: chosen.reason });
  }

  async function askCancel(table) {
    const tile = app.tiles.get(table);
    const round = tile && tile.state && tile.state.round;
    if (!round) return;
    const chosen = await confirmDialog({
      title: `Cancel round ${round.id} on table ${table}?`,
      lines: [
        `Round ${round.id} is void.`,
        "Every bet in it is refunded.",
        "The cards dealt in it are discarded.",
        "This cannot be undone.",
      ],
      okLabel: `Void round ${round.id}`,
      reasonCaption: "Reason (optional)",
      reasonRequired: false,
    });
    // round_id: the table refuses if another round is in play by the time it gets this.
    if (chosen) act(table, "actions", "cancel", { round_id: round.id, reason: chosen.reason });
  }

  async function askEndShoe(table, shoeId) {
    const chosen = await confirmDialog({
      title: `End shoe ${shoeId} on table ${table}?`,
      lines: [
        `Shoe ${shoeId} is finished: no more rounds are dealt from it.`,
        "The table then waits for a shuffle and a new shoe.",
      ],
      okLabel: `End shoe ${shoeId}`,
      reasonCaption: "Reason (optional)",
      reasonRequired: false,
    });
    if (chosen) act(table, "actions", "end_shoe", { reason: chosen.reason });
  }

  async function askNewShoe(table, shoeId) {
    const lines = shoeId !== null && shoeId !== undefined
      ? [`Shoe ${shoeId} ends now.`, "Declare a new shoe only once it is shuffled and in the shoe."]
      : ["Declare a new shoe only once it is shuffled and in the shoe."];
    lines.push("The dealer then reveals its first card and burns.");
    const chosen = await confirmDialog({
      title: `Declare a new shoe on table ${table}?`, lines, okLabel: "Declare the new shoe", reasonCaption: null,
    });
    if (chosen) act(table, "actions", "new_shoe", {});
  }

  // --- the card picker -------------------------------------------------------------------------

  const picker = { table: null, possible: [], complete: true };

  function pickerUpdate() {
    const input = byTestId("card-input");
    const parse = byTestId("card-parse");
    const submit = byTestId("card-submit");
    const text = input.value.trim();
    const card = parseCard(text);
    let ok = false;
    parse.classList.remove("error");
    if (!text) {
      parse.textContent = "Type the card, or pick it below.";
    } else if (!card) {
      parse.textContent = `"${text}" is not a card: a rank (A 2-10 J Q K) then a suit (S H D C)`;
      parse.classList.add("error");
    } else if (!picker.possible.includes(card)) {
      parse.textContent = `${rankText(card[0])}${SUIT_SYMBOL[card[1]]} cannot be in this shoe: its eight copies were dealt`;
      parse.classList.add("error");
    } else {
      parse.textContent = `${rankText(card[0])}${SUIT_SYMBOL[card[1]]}: the ${cardName(card)}`;
      ok = true;
    }
    submit.disabled = !ok;
    submit.dataset.card = ok ? card : "";
    for (const button of byTestId("card-faces").querySelectorAll("button")) {
      button.classList.toggle("chosen", button.dataset.card === card);
    }
  }

  async function openPicker(table) {
    const tile = app.tiles.get(table);
    if (!tile || !tile.state || !tile.state.pause) return;
    const dialog = byTestId("card-picker");
    const input = byTestId("card-input");
    const faces = byTestId("card-faces");
    picker.table = table;
    picker.possible = [];
    byTestId("card-picker-title").textContent = `Enter a card on table ${table}`;
    byTestId("card-picker-need").textContent = (tile.state.pause.needs || []).join("; ") || tile.state.pause.message;
    byTestId("card-faces-note").textContent = "Loading the faces still possible in this shoe\u2026";
    faces.replaceChildren();
    input.value = "";
    pickerUpdate();
    dialog.showModal();
    input.focus();
    try {
      const answer = await getJson(`/api/tables/${encodeURIComponent(table)}/faces`);
      if (picker.table !== table) return;
      picker.possible = answer.possible || [];
      picker.complete = answer.complete !== false;
      byTestId("card-faces-note").textContent = picker.complete
        ? "Only the faces still possible in this shoe are offered."
        : "The console did not see this shoe's start: some faces offered may be used up.";
      const bySuit = SUITS.split("").map((suit) => h("div", { class: "face-row" },
        RANKS.split("").map((rank) => rank + suit).filter((card) => picker.possible.includes(card)).map((card) =>
          h("button", {
            type: "button", class: `face ${card[1] === "H" || card[1] === "D" ? "red" : "black"}`,
            testid: `face-${card}`, "data-card": card, title: cardName(card),
            onclick: () => { input.value = card; pickerUpdate(); input.focus(); },
          }, rankText(card[0]), SUIT_SYMBOL[card[1]]))));
      faces.replaceChildren(...bySuit);
      pickerUpdate();
    } catch (error) {
      byTestId("card-faces-note").textContent = `The faces could not be loaded: ${error.message}`;
    }
  }

  function setUpPicker() {
    const dialog = byTestId("card-picker");
    const input = byTestId("card-input");
    input.addEventListener("input", pickerUpdate);
    byTestId("card-cancel").addEventListener("click", () => dialog.close());
    dialog.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      const card = byTestId("card-submit").dataset.card;
      if (!card) return;
      const table = picker.table;
      dialog.close();
      const tile = app.tiles.get(table);
      const pause = tile && tile.state ? tile.state.pause : null;
      act(table, "queue", "resume", { resolution: "enter_card", card }, (answer) => {
        // The table may stay paused (an outage: each card, then no_cards_drawn).
        if (answer.ok && pause) {
          app.resolved.set(table, { pause, key: pauseKey(table, pause), until: Date.now() + RESOLVED_SHOWN_MS });
        }
      });
    });
    dialog.addEventListener("close", () => { picker.table = null; });
  }

  // --- round history and audit -------------------------------------------------------------------

  function eventSummary(event) {
    const d = event.data || {};
    switch (event.type) {
      case "round_opened":
        return `round ${d.round_id} opened: round ${d.round_number} of shoe ${d.shoe_id}, betting closes ${clock(d.betting_closes_at)}`;
      case "betting_closed": return `betting closed (round ${d.round_id})`;
      case "card_dealt":
        return h("span", null, `card to ${d.position} `, d.face_down ? cardFace(null) : cardFace(d.card),
          h("span", { class: `source source-${d.source}` }, ` from ${d.source}`));
      case "hole_card_read":
        return h("span", null, `hole card at ${d.position} read by ${d.source} `, d.card ? cardFace(d.card) : "");
      case "decision_requested":
        return `decision asked: ${d.kind} for box ${d.box} hand ${d.hand} (${(d.options || []).join("/")}, default ${d.default})`;
      case "decision_taken":
        return `decision: ${d.decision} for box ${d.box} hand ${d.hand}${d.auto ? " (the default, at the deadline)" : ""}`;
      case "table_paused":
        return `PAUSED${d.by ? ` by ${d.by}` : ""}: ${d.message}`;
      case "table_resumed":
        return `resumed by ${d.by}${d.resolution ? ` (${words(d.resolution)})` : ""}`;
      case "cards_burned": return `${d.count} card(s) drawn out of turn burned`;
      case "round_settled": return settledSummary(d.result || {});
      case "round_voided":
        return `round ${d.round_id} VOID by ${d.by}${d.reason ? ` (${d.reason})` : ""}: every bet refunded, ${d.cards_discarded} card(s) discarded`;
      case "shoe_started": return `shoe ${d.shoe_id} declared by ${d.by}`;
      case "shoe_ended": return `shoe ${d.shoe_id} ended: ${d.why}`;
      case "cut_card_drawn": return `cut card out: last round ${d.final_round}`;
      case "shoe_offline": return `shoe offline: ${d.reason}`;
      case "shoe_online": return "shoe online";
      // Any other event: its name in words and the table's own message, never its JSON.
      default: return `${words(event.type)}${typeof d.message === "string" ? `: ${d.message}` : ""}`;
    }
  }

  /** A machine word (`no_cards_drawn`) as people write it ("no cards drawn"). */
  function words(code) {
    return String(code).replace(/_/g, " ");
  }

  function settledSummary(result) {
    if (result.winner) {
      return h("span", null, `settled: ${result.winner} wins, player ${result.player_total} `, cards(result.player),
        ` banker ${result.banker_total} `, cards(result.banker));
    }
    const parts = [];
    if (result.dealer) {
      parts.push(`settled: dealer ${result.dealer.total}${result.dealer.busted ? " bust" : ""}${result.dealer.blackjack ? " blackjack" : ""} `,
        cards(result.dealer.cards));
    }
    for (const box of result.boxes || []) parts.push(` box${box.box} net ${box.net}`);
    if (result.player_cards) parts.push(" players ", cards(result.player_cards));
    return h("span", null, parts.length ? parts : "settled");
  }

  function historyView(round) {
    const events = round.events || [];
    const end = events.find((event) => event.type === "round_settled" || event.type === "round_voided");
    const outcome = !end ? "in play" : end.type === "round_voided" ? "VOID: every bet refunded" : "settled";
    // The round's dealer, as round_settled (or round_opened) names it (older tables name none).
    const named = [...events].reverse().find((event) => event.data && typeof event.data.dealer === "string");
    const dealer = named ? `, dealt by ${named.data.dealer}` : "";
    return h("div", { class: "history-view", testid: "history-view" },
      // The printable page's main heading; a heading within the wall's dialog.
      h(document.body.dataset.page === "history" ? "h1" : "h2", { testid: "history-title" },
        `Table ${round.table}, round ${round.round_id}: ${outcome}${dealer}`),
      h("p", { class: "hint", testid: "history-span" }, `${events.length} events` + (events.length
        ? ` on ${day(events[0].at)}, ${clock(events[0].at)} to ${clock(events[events.length - 1].at)} (this browser's time)`
        : "")),
      h("table", { class: "events", testid: "history-events" },
        h("thead", null, h("tr", null, h("th", null, "seq"), h("th", null, "time"), h("th", null, "event"), h("th", null, "details"))),
        h("tbody", null, events.map((event) => h("tr", { testid: "history-row", "data-type": event.type, "data-seq": String(event.seq) },
          h("td", null, String(event.seq)), h("td", null, clock(event.at)), h("td", null, event.type), h("td", null, eventSummary(event)))))));
  }

  async function loadRound(table, roundId, into) {
    into.replaceChildren(h("p", null, "Loading\u2026"));
    try {
      const round = await getJson(`/api/tables/${encodeURIComponent(table)}/rounds/${encodeURIComponent(roundId)}`);
      into.replaceChildren(historyView(round));
    } catch (error) {
      into.replaceChildren(h("p", { class: "error", testid: "history-error" },
        `Round ${roundId} of ${table} could not be loaded: ${error.message} `,
        h("button", { type: "button", testid: "history-retry", onclick: () => loadRound(table, roundId, into) }, "Try again")));
    }
  }

  function lastRoundId(tile) {
    if (tile.state && tile.state.round) return tile.state.round.id;
    // The last round this page saw in play, or one the recent events name (a page opened
    // after the round ended).
    const ids = (tile.recent || []).map((event) => event.data && event.data.round_id).filter((id) => Number.isInteger(id));
    if (app.lastRound.has(tile.table)) ids.push(app.lastRound.get(tile.table));
    return ids.length ? Math.max(...ids) : null;
  }

  function printableHref(table, roundId) {
    return `/history?table=${encodeURIComponent(table)}&round=${encodeURIComponent(roundId)}`;
  }

  const historyState = { table: null };

  function openHistory(table) {
    const tile = app.tiles.get(table);
    const dialog = byTestId("history-dialog");
    const input = byTestId("history-round");
    historyState.table = table;
    byTestId("history-table").textContent = `of table ${table}`;
    const last = tile ? lastRoundId(tile) : null;
    input.value = last === null ? "" : String(last);
    byTestId("history-content").replaceChildren(h("p", { class: "hint" }, last === null ? "No round seen yet: type a round id." : ""));
    byTestId("history-printable").hidden = last === null;
    if (last !== null) {
      byTestId("history-printable").setAttribute("href", printableHref(table, last));
      loadRound(table, last, byTestId("history-content"));
    }
    dialog.showModal();
  }

  function setUpHistory() {
    const dialog = byTestId("history-dialog");
    dialog.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      const roundId = byTestId("history-round").value.trim();
      if (!/^\d+$/.test(roundId)) return;
      byTestId("history-printable").hidden = false;
      byTestId("history-printable").setAttribute("href", printableHref(historyState.table, roundId));
      loadRound(historyState.table, roundId, byTestId("history-content"));
    });
    byTestId("history-close").addEventListener("click", () => dialog.close());
  }

  async function openAudit(table) {
    const dialog = byTestId("audit-dialog");
    const content = byTestId("audit-content");
    byTestId("audit-table").textContent = `of table ${table}`;
    const csv = byTestId("audit-csv");
    csv.setAttribute("href", `/api/tables/${encodeURIComponent(table)}/audit.csv`);
    csv.setAttribute("download", `audit-${table}.csv`);
    content.replaceChildren(h("p", null, "Loading\u2026"));
    dialog.showModal();
    try {
      const answer = await getJson(`/api/tables/${encodeURIComponent(table)}/audit`);
      // Newest first: what a supervisor looks for is what was just done. The console lists
      // them in the journal's order (the CSV keeps it).
      const entries = (answer.entries || []).slice().reverse();
      // The CSV's columns, in its order (the time as this browser's), then any others.
      const columns = ["journal_seq", "at", "account", "role", "command", "args", "ok", "code", "message", "transaction"];
      for (const entry of entries) for (const key of Object.keys(entry)) if (!columns.includes(key)) columns.push(key);
      const shown = columns.filter((column) => entries.some((entry) => column in entry));
      const heading = { journal_seq: "journal", at: "time" };
      const cell = (column, value) => {
        if (column === "at" && typeof value === "number") return `${day(value)} ${clock(value)}`;
        if (value !== null && typeof value === "object") return JSON.stringify(value);
        return value === null || value === undefined ? "" : String(value);
      };
      content.replaceChildren(entries.length
        ? h("table", { class: "events audit-table", testid: "audit-entries" },
          h("thead", null, h("tr", null, shown.map((column) => h("th", null, heading[column] || column)))),
          h("tbody", null, entries.map((entry) => h("tr", {
            testid: "audit-row", class: entry.ok === false ? "refused" : null,
          }, shown.map((column) => h("td", { "data-column": column }, cell(column, entry[column])))))))
        : h("p", { class: "hint" }, "No audit entries."));
    } catch (error) {
      content.replaceChildren(h("p", { class: "error" }, `The audit could not be loaded: ${error.message}`));
    }
  }

  // --- keyboard --------------------------------------------------------------------------------

  function typing(target) {
    return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const help = byTestId("help-overlay");
    if (event.key === "?") {
      event.preventDefault();
      if (help.open) help.close();
      else if (!document.querySelector("dialog[open]")) help.showModal();
      return;
    }
    if (document.querySelector("dialog[open]")) return;
    const paused = pausedTables();
    const index = paused.findIndex((tile) => tile.table === app.selected);
    if (event.key === "j" || event.key === "ArrowDown") {
      if (paused.length) select(paused[Math.min(paused.length - 1, index + 1)].table);
      event.preventDefault();
      render();
      return;
    }
    if (event.key === "k" || event.key === "ArrowUp") {
      if (paused.length) select(paused[Math.max(0, index - 1)].table);
      event.preventDefault();
      render();
      return;
    }
    if (!isSupervisor() || index < 0) return;
    const tile = paused[index];
    const choice = choicesFor(tile.state.pause).find((known) => known[2] === event.key);
    if (choice && whyNotResolve(tile, choice[0]) === null) {
      event.preventDefault();
      resolve(tile.table, choice[0]);
    }
  }

  // --- start -----------------------------------------------------------------------------------

  /** The session as /api/session has it: a person's, or (theirs ended) the wall's. */
  function showSession(session) {
    app.session = session;
    if (session.link) app.link = session.link;
    byTestId("session-account").textContent = session.wall ? "signed out" : session.account;
    byTestId("session-role").textContent = session.wall ? "watching" : session.role;
    document.body.dataset.role = session.role;
    document.body.dataset.wall = String(Boolean(session.wall));
    byTestId("banner-wall").hidden = !session.wall;
    byTestId("banner-wall-idle").textContent = seconds(session.idle_timeout_s || 0).replace(/ 0 s$/, "");
    byTestId("signout").hidden = Boolean(session.wall);
    render();
  }

  function setUpHeader() {
    showSession(app.session);
    const toggle = byTestId("sound-toggle");
    app.sound = window.localStorage.getItem("livetable.sound") === "on";
    toggle.checked = app.sound;
    toggle.addEventListener("change", () => {
      app.sound = toggle.checked;
      window.localStorage.setItem("livetable.sound", app.sound ? "on" : "off");
      if (app.sound) audioContext(); // a user gesture: the browser lets the page make sound
    });
    byTestId("sound-test").addEventListener("click", playBeep);
    byTestId("help-open").addEventListener("click", () => byTestId("help-overlay").showModal());
    byTestId("signout").addEventListener("click", async () => {
      try {
        await fetch("/signout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": app.session.csrf } });
      } finally {
        window.location.assign("/signin");
      }
    });
  }

  async function startWall() {
    try {
      app.session = await getJson("/api/session");
    } catch (error) {
      document.body.dataset.error = String(error.message);
      return;
    }
    setUpHeader();
    setUpPicker();
    setUpHistory();
    byTestId("audit-close").addEventListener("click", () => byTestId("audit-dialog").close());
    document.addEventListener("keydown", onKey);
    await reloadTables().catch(() => {});
    connectStream();
    setInterval(tick, 200);
    // Resolved pauses and answers leave the page when their time is up.
    setInterval(() => { if (app.resolved.size || app.answers.size) render(); }, 1000);
  }

  async function startHistoryPage() {
    const query = new URLSearchParams(window.location.search);
    const table = query.get("table") || "";
    const roundId = query.get("round") || "";
    const content = byTestId("history-content");
    const print = byTestId("history-print");
    if (print) print.addEventListener("click", () => window.print());
    document.title = `Table ${table}, round ${roundId} - livetable`;
    if (!table || !/^\d+$/.test(roundId)) {
      content.replaceChildren(h("p", { class: "error" }, "Name a table and a round: /history?table=t1&round=7"));
      return;
    }
    await loadRound(table, roundId, content);
    document.body.dataset.loaded = "true";
  }

  function start() {
    const page = document.body.dataset.page;
    if (page === "history" || window.location.pathname === "/history") {
      if (page !== "history") {
        // Served the app page at /history: show the printable round instead of the wall.
        document.body.dataset.page = "history";
        document.body.replaceChildren(h("main", { class: "history-page", testid: "history-page" },
          h("nav", { class: "noprint" }, h("a", { href: "/", testid: "history-back" }, "Back to the console"), " ",
            h("button", { type: "button", testid: "history-print" }, "Print")),
          h("div", { class: "history-content", testid: "history-content" })));
      }
      startHistoryPage();
    } else {
      startWall();
    }
  }

  // For the tests and the curious: the card parser, read-only.
  window.livetableConsole = Object.freeze({ parseCard });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
