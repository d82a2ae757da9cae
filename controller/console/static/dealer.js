// The screen that faces the dealer: one table, read from two metres. What to do now (the
// table's dealer line, in the studio's language), where the next card goes (drawn on a
// sketch of the game's layout, as /api/games declares it), the cards left to burn, the
// countdown, the round's public cards and totals, and a pause as one plain sentence. It
// shows only what the table's public state and dealer line say: never a hole card before
// the rules turn it over, never a burn card's face (neither is in them).
//
// A kiosk: its account (role dealer) is never signed out for being idle, and the page
// reconnects by itself. The dealer signs in and out with a staff id, typed or scanned by a
// badge reader that types and presses Enter.

import {
  ageWords, chooseLanguage, dealerLineWords, languagePicker, loadLanguage, positionWords, refusalWords, t,
  translatePage,
} from "./i18n.js";

const RECONNECT_MS = 2000;
const SIGNED_OUT_URL = "/signin?ended=1";
// A staff id as the table takes it (docs/mqtt-api.md, dealer_sign_in): checked here too,
// so a badge misread says so at once.
const STAFF_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;
const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const SVG = "http://www.w3.org/2000/svg";

const screen = {
  session: null,
  games: {},
  table: null, // the table shown (?table=, or the account's only one)
  tiles: new Map(),
  clockOffset: 0,
  streamUp: false,
  link: { up: true, why: "" },
  answer: null, // {ok, text}
};

const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
const serverNow = () => Date.now() / 1000 + screen.clockOffset;

function h(tag, props, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "testid") element.setAttribute("data-testid", value);
    else element.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value !== null && value !== undefined) element.setAttribute(key, String(value));
  }
  for (const child of children) element.append(child instanceof Node ? child : String(child));
  return element;
}

function setText(element, text) {
  if (element && element.textContent !== text) element.textContent = text;
}

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (response.status === 401) {
    window.location.assign(SIGNED_OUT_URL);
    throw new Error("signed out");
  }
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

// --- what is shown ---------------------------------------------------------------------------

function currentTile() {
  if (screen.table !== null) return screen.tiles.get(screen.table) || null;
  if (screen.tiles.size === 1) return [...screen.tiles.values()][0];
  return null;
}

/** The big sentence: what the dealer does now. */
function instruction(tile) {
  const state = tile.state || {};
  if (tile.status === "offline") return { text: t("dealer.offline"), kind: "stop" };
  if (state.phase === "PAUSED" && state.pause) {
    const reason = state.pause.reason;
    return { text: t(`dealer.stop.${reason}`, null, t("dealer.stop.unknown")), kind: "stop" };
  }
  const line = tile.dealer || { action: "wait" };
  const kinds = { deal: "deal", reveal: "deal", burn: "burn", stop: "stop" };
  return { text: dealerLineWords(line, state), kind: kinds[line.action] || "wait" };
}

/** Where the next card goes, as the rules name it; null when no card is awaited. */
function nextPosition(tile) {
  const state = tile.state || {};
  if (state.phase === "PAUSED") return null;
  const line = tile.dealer || {};
  if (line.action === "deal" && line.position) return line.position;
  const awaiting = state.awaiting || {};
  return awaiting.what === "card" ? awaiting.position : null;
}

function burnLeft(tile) {
  const state = tile.state || {};
  const awaiting = state.awaiting || {};
  if (awaiting.what === "burn" && typeof awaiting.cards === "number") return awaiting.cards;
  const line = tile.dealer || {};
  return line.action === "burn" && typeof line.count === "number" ? line.count : null;
}

function countdown(state) {
  const round = state.round;
  const deadline = round ? round.deadline : null;
  if (deadline === null || deadline === undefined || !["BETTING", "DECIDING"].includes(state.phase)) return null;
  const awaiting = state.awaiting || {};
  const label = state.phase === "BETTING"
    ? t("dealer.betting_closes")
    : t("dealer.decision", { kind: t(`decision.${awaiting.kind}`, null, awaiting.kind || "") });
  return { deadline, label };
}

// --- the layout sketch -----------------------------------------------------------------------

/** The spots of the game's layout: [{position, label, x, y, w, h}] in a 400 x 220 box,
 * drawn as the dealer sees the table: the dealer's straight edge at the bottom, the players'
 * places along the far side (box 1 on the dealer's left). */
function spots(shown, view) {
  if (!shown) return [];
  if (shown.shape === "sides") {
    const n = shown.hands.length;
    const width = 300 / n;
    return shown.hands.map((hand, index) => ({
      position: hand, label: positionWords(hand), x: 50 + index * width + 8, y: 40, w: width - 16, h: 80,
    }));
  }
  const found = [{ position: "dealer", label: positionWords("dealer"), x: 140, y: 144, w: 120, h: 56 }];
  if (shown.hands.includes("player")) {
    found.push({ position: "player", label: positionWords("player"), x: 130, y: 30, w: 140, h: 64 });
    return found;
  }
  const boxes = view && Array.isArray(view.boxes) && view.boxes.length
    ? view.boxes.map((box) => box.box) : [1, 2, 3, 4, 5, 6, 7];
  const count = Math.max(...boxes, 1);
  boxes.forEach((number) => {
    // Along the far arc, box 1 on the dealer's left.
    const angle = Math.PI * (0.1 + 0.8 * ((count - number) / Math.max(1, count - 1)));
    const cx = 200 + 165 * Math.cos(angle);
    const cy = 130 - 105 * Math.sin(angle);
    found.push({ position: `box${number}`, label: String(number), x: cx - 22, y: cy - 20, w: 44, h: 40 });
  });
  return found;
}

function drawLayout(tile) {
  const holder = byTestId("dealer-layout-drawing");
  const state = tile.state || {};
  const view = state.round ? state.round.view : null;
  const shown = screen.games[state.game];
  const next = nextPosition(tile);
  const nextSpot = next ? String(next).split(".")[0] : null;
  const key = JSON.stringify([state.game, nextSpot, view && view.boxes ? view.boxes.map((b) => b.box) : null,
    document.documentElement.lang]);
  if (holder.dataset.key === key) return;
  holder.dataset.key = key;
  const drawing = svg("svg", { viewBox: "0 0 400 220", role: "img", "aria-label": t("dealer.layout") });
  drawing.append(svg("path", { class: "felt", d: "M10 210 H390 V100 A190 95 0 0 0 10 100 Z" }));
  for (const spot of spots(shown, view)) {
    const isNext = spot.position === nextSpot;
    const group = svg("g", {
      class: isNext ? "spot next" : "spot",
      "data-testid": `layout-spot-${spot.position}`,
      "data-next": isNext ? "true" : "false",
    });
    group.append(svg("rect", { x: spot.x, y: spot.y, width: spot.w, height: spot.h, rx: 8 }));
    group.append(svg("text", { x: spot.x + spot.w / 2, y: spot.y + spot.h / 2, "dominant-baseline": "middle",
      "text-anchor": "middle" }, spot.label));
    drawing.append(group);
  }
  holder.replaceChildren(drawing);
}

// --- the round -------------------------------------------------------------------------------

function cardFace(card) {
  if (card === null || card === undefined) {
    return h("span", { class: "card back", testid: "dealer-card-back", role: "img", "aria-label": t("dealer.face_down") });
  }
  const text = String(card);
  if (!/^[2-9TJQKA][SHDC]$/.test(text)) return h("span", { class: "card", testid: "dealer-card" }, "?");
  const rank = text[0] === "T" ? "10" : text[0];
  const colour = text[1] === "H" || text[1] === "D" ? "red" : "black";
  return h("span", { class: `card ${colour}`, testid: "dealer-card", "data-card": text },
    rank, SUIT_SYMBOL[text[1]]);
}

function handRow(position, cards, total) {
  const totalText = total === null || total === undefined || total === "" ? t("dealer.no_total") : t("dealer.total", { total });
  return h("div", { class: "hand", testid: `dealer-hand-${position}` },
    h("span", { class: "hand-name" }, positionWords(position)),
    h("span", { class: "hand-cards" }, (cards || []).map(cardFace)),
    h("span", { class: "hand-total", testid: "dealer-hand-total" }, totalText));
}

function softTotal(value, soft) {
  if (value === null || value === undefined) return null;
  return soft ? `${value - 10}/${value}` : String(value);
}

function handRows(state) {
  const view = state.round ? state.round.view : null;
  if (!view) return [];
  const shown = screen.games[view.game] || screen.games[state.game];
  const rows = [];
  if (shown && shown.shape === "sides") {
    for (const hand of shown.hands) rows.push(handRow(hand, view[hand], view[`${hand}_total`]));
    if (view.complete && view.winner) {
      rows.push(h("p", { class: "winner", testid: "dealer-winner" }, t("dealer.winner", { hand: positionWords(view.winner) })));
    }
    return rows;
  }
  if (view.dealer) rows.push(handRow("dealer", view.dealer.cards, softTotal(view.dealer.total, view.dealer.soft)));
  if (view.player) {
    rows.push(handRow("player", view.player.cards,
      softTotal(view.player.sequence_total ?? view.player.initial_total, view.player.soft)));
  }
  for (const box of view.boxes || []) {
    (box.hands || []).forEach((hand, index) => {
      const position = box.hands.length > 1 ? `box${box.box}.hand${index + 1}` : `box${box.box}`;
      rows.push(handRow(position, hand.cards, softTotal(hand.total, hand.soft)));
    });
  }
  return rows;
}

// --- drawing ---------------------------------------------------------------------------------

let drawnHands = "";

function draw() {
  const tile = currentTile();
  byTestId("banner-connection").hidden = screen.streamUp;
  byTestId("banner-link").hidden = screen.link.up;
  document.body.dataset.stream = screen.streamUp ? "up" : "down";
  if (!tile) {
    setText(byTestId("dealer-instruction"), screen.tiles.size > 1 && screen.table === null
      ? t("dealer.choose_table") : t("dealer.no_table"));
    byTestId("dealer-instruction").dataset.kind = "wait";
    return;
  }
  const state = tile.state || {};
  const title = t("dealer.table", { table: tile.table });
  setText(byTestId("dealer-table"), title);
  const pageTitle = t("dealer.page_title", { table: tile.table });
  if (document.title !== pageTitle) document.title = pageTitle;
  const dealer = state.dealer;
  setText(byTestId("dealer-on-duty"), dealer && dealer.staff_id
    ? t("dealer.on_duty", { staff: dealer.staff_id }) : t("dealer.nobody"));

  const said = instruction(tile);
  const sentence = byTestId("dealer-instruction");
  setText(sentence, said.text);
  sentence.dataset.kind = said.kind;
  document.body.dataset.kind = said.kind;
  document.body.dataset.status = tile.status;
  const paused = state.phase === "PAUSED" && state.pause;
  sentence.dataset.since = paused && typeof state.pause.since === "number" ? String(state.pause.since) : "";

  const next = nextPosition(tile);
  setText(byTestId("dealer-next"), next ? positionWords(next) : "\u2013");
  byTestId("dealer-next-fact").classList.toggle("idle", !next);
  const burn = burnLeft(tile);
  setText(byTestId("dealer-burn"), burn === null ? "\u2013" : String(burn));
  byTestId("dealer-burn-fact").classList.toggle("idle", burn === null);
  const clock = countdown(state);
  const clockFact = byTestId("dealer-countdown-fact");
  clockFact.classList.toggle("idle", clock === null);
  setText(byTestId("dealer-countdown-label"), clock ? clock.label : t("dealer.countdown"));
  byTestId("dealer-countdown").dataset.deadline = clock ? String(clock.deadline) : "";

  drawLayout(tile);
  const round = state.round;
  setText(byTestId("dealer-round-title"), round ? t("dealer.round", { round: round.id }) : t("dealer.no_round"));
  const handsKey = JSON.stringify([round ? round.view : null, document.documentElement.lang]);
  if (handsKey !== drawnHands) {
    drawnHands = handsKey;
    byTestId("dealer-hands").replaceChildren(...handRows(state));
  }
  const shoe = state.shoe || {};
  setText(byTestId("dealer-shoe"), typeof shoe.cards_left === "number" ? t("dealer.cards_left", { count: shoe.cards_left }) : "");
  const answer = byTestId("dealer-answer");
  setText(answer, screen.answer ? screen.answer.text : "");
  answer.dataset.ok = screen.answer ? String(screen.answer.ok) : "";
  tick();
}

/** The live parts: the countdown and the pause's age. */
function tick() {
  const now = serverNow();
  const countdownElement = byTestId("dealer-countdown");
  const deadline = countdownElement.dataset.deadline;
  if (deadline) {
    const left = Number(deadline) - now;
    setText(countdownElement, left > 0 ? t("dealer.seconds", { n: Math.ceil(left) }) : t("dealer.due_now"));
    countdownElement.classList.toggle("urgent", left < 5);
  } else {
    setText(countdownElement, "\u2013");
  }
  const since = byTestId("dealer-instruction").dataset.since;
  setText(byTestId("dealer-pause-age"), since ? t("dealer.paused_for", { age: ageWords(now - Number(since)) }) : "");
}

// --- signing a dealer in and out -------------------------------------------------------------

async function send(command, args) {
  const tile = currentTile();
  if (!tile) return;
  screen.answer = { ok: null, text: t("dealer.sending") };
  draw();
  let answer;
  try {
    const response = await fetch(`/api/tables/${encodeURIComponent(tile.table)}/request`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": screen.session.csrf },
      body: JSON.stringify({ command, args }),
    });
    if (response.status === 401) {
      window.location.assign(SIGNED_OUT_URL);
      return;
    }
    answer = await response.json().catch(() => ({ ok: false, code: `http_${response.status}` }));
  } catch (error) {
    answer = { ok: false, code: "network" };
  }
  if (answer.ok) {
    const staff = args.staff_id;
    screen.answer = { ok: true, text: staff ? t("dealer.signed_in", { staff }) : t("dealer.signed_out") };
  } else {
    screen.answer = { ok: false, text: refusalWords(answer.code, answer.message) };
  }
  draw();
}

function setUpStaff() {
  const form = byTestId("dealer-signin");
  const input = byTestId("dealer-staff");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const staff = input.value.trim();
    if (!STAFF_ID.test(staff)) {
      screen.answer = { ok: false, text: t("dealer.bad_staff") };
      draw();
      input.select();
      return;
    }
    input.value = "";
    send("dealer_sign_in", { staff_id: staff });
    input.focus();
  });
  byTestId("dealer-signout").addEventListener("click", () => {
    send("dealer_sign_out", {});
    input.focus();
  });
  // A badge reader types where the focus is: keep it in the staff id's field.
  input.focus();
}

// --- the stream ------------------------------------------------------------------------------

async function reload() {
  const answer = await getJson("/api/tables");
  if (typeof answer.now === "number") screen.clockOffset = answer.now - Date.now() / 1000;
  if (answer.link) screen.link = answer.link;
  screen.tiles = new Map((answer.tables || []).map((tile) => [tile.table, tile]));
  document.body.dataset.loaded = "true";
  draw();
}

function connect() {
  const source = new EventSource("/api/stream");
  source.addEventListener("open", () => {
    screen.streamUp = true;
    reload().catch(() => {});
    draw();
  });
  source.addEventListener("hello", (message) => {
    const hello = JSON.parse(message.data);
    if (typeof hello.now === "number") screen.clockOffset = hello.now - Date.now() / 1000;
  });
  source.addEventListener("tile", (message) => {
    const tile = JSON.parse(message.data);
    screen.tiles.set(tile.table, tile);
    draw();
  });
  source.addEventListener("link", (message) => {
    screen.link = JSON.parse(message.data);
    draw();
  });
  source.addEventListener("error", () => {
    screen.streamUp = false;
    draw();
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (an HTTP error): a session that ended goes to the sign-in page.
      fetch("/api/session", { credentials: "same-origin", cache: "no-store" })
        .then((response) => { if (response.status === 401) window.location.assign(SIGNED_OUT_URL); })
        .catch(() => {})
        .finally(() => setTimeout(connect, RECONNECT_MS));
    }
  });
}

async function start() {
  try {
    screen.session = await getJson("/api/session");
    screen.games = await getJson("/api/games");
    await loadLanguage(chooseLanguage(screen.session.language));
  } catch (error) {
    document.body.dataset.error = String(error.message);
    return;
  }
  const wanted = new URLSearchParams(window.location.search).get("table");
  screen.table = wanted || null;
  translatePage();
  languagePicker(byTestId("dealer-language"));
  setUpStaff();
  await reload().catch(() => {});
  connect();
  setInterval(tick, 250);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
