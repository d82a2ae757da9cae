// The page's constants, its state and the small helpers every part uses: elements built as text (never HTML), times, cards.
//
// Every string that comes from a table (ids, messages, reasons, account names, cards) is put
// into the page as text (textContent, text nodes, attribute values): never as HTML.

import { t } from "./i18n.js";

// --- constants -----------------------------------------------------------------------------

export const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
export const RANKS = "A23456789TJQK";
export const SUITS = "SHDC";
export const STATUS_WORD = {
  paused: "PAUSED", offline: "OFFLINE", stale: "STALE", unknown: "UNKNOWN", running: "RUNNING",
};
// A table in these statuses does not answer (its daemon offline, or silent in a round):
// unless its last state is a pause, it has a place in the pause queue of its own.
export const NOT_ANSWERING = ["offline", "stale"];
// A running table waiting for a shuffle deals nothing: its badge says so, not RUNNING.
export const NO_SHOE_WORD = "NO SHOE";
// How long a pause resolved from this page stays in the queue, with the table's answer.
export const RESOLVED_SHOWN_MS = 15000;
export const RECONNECT_MS = 2000;
// How long a table's answer stays beside the control that got it.
export const ANSWER_SHOWN_MS = 120000;
// A new pause clears the answers shown before it, except one that came just before it:
// that one is likely its cause (a pause asked here, a card accepted within a pause), and
// its table's state can reach the page a moment after the answer.
export const ANSWER_CAUSE_MS = 1500;
// The announcer keeps the last few pauses it said (a screen reader reads each as it comes).
export const ANNOUNCED_KEPT = 5;
export const TITLE = "livetable console";
// Where a page whose session ended goes: the sign-in page, saying why.
export const SIGNED_OUT_URL = "/signin?ended=1";

// --- the page's state ----------------------------------------------------------------------

export const app = {
  session: null, // /api/session
  tiles: new Map(), // table id -> Tile
  clockOffset: 0, // server time.time() minus this browser's, in seconds
  link: { up: true, why: "" },
  streamUp: false,
  answers: new Map(), // `${table}|${slot}` -> {ok, text}
  pending: new Set(), // `${table}|${slot}` while a request is on its way
  resolved: new Map(), // table -> {pause, until}: resolved here, still shown in the queue
  seenPauses: new Set(), // pause keys already known (no beep for them)
  down: new Set(), // tables known not to answer (said once, when they stopped)
  selected: null, // the table selected in the pause queue
  // Chosen by the supervisor (keys, a click), or the queue's head by default. The default
  // follows the head: a pause older than the selected one can reach this page after it
  // (each table's tile comes on its own), and the oldest is what the keys act on first.
  selectedByHand: false,
  openRecent: new Set(), // tables whose "recent events" list is open
  lastRound: new Map(), // table -> the last round id seen in its state
  games: {}, // /api/games: game id -> how it is shown (its hands, its bets' names)
  // /api/commands: each command the page offers -> its fields, roles and line of help, as
  // the API's one list declares them (never a copy of it here).
  commands: {},
  sound: false,
  audio: null,
  beeps: 0,
  streamTiles: 0, // tiles the event stream brought, counted
  streamTileAt: new Map(), // table -> that count at its last tile from the stream
  // The wall's order of statuses, most urgent first: the server's (/api/tables "order"),
  // never a copy of it here.
  statusOrder: [],
  pointerOnWall: false, // the wall's new order waits while it is there (or the focus is)
  // One-key actions waiting out their undo window: table -> {resolution, verb, until,
  // timer, key (the pause's)}. Sent when the window ends; Esc or Undo takes one back.
  undo: new Map(),
};

// --- small helpers -------------------------------------------------------------------------

/** An element: props are attributes (testid -> data-testid, on* -> listeners); children
 * are nodes or strings, which become text nodes (never parsed as HTML). */
export function h(tag, props, ...children) {
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

export const byTestId = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);
export const serverNow = () => Date.now() / 1000 + app.clockOffset;
export const isSupervisor = () => app.session !== null && app.session.role === "supervisor";

export function clock(at) {
  if (at === null || at === undefined) return "?";
  return new Date(at * 1000).toLocaleTimeString(pageLocale(), { hour12: false });
}

export function day(at) {
  if (at === null || at === undefined) return "?";
  return new Date(at * 1000).toLocaleDateString(pageLocale(), { year: "numeric", month: "short", day: "numeric" });
}

/** Dates and times as the page's language writes them: the browser's own variant of it
 * (en-GB, es-MX) when it has one, else the language itself. */
function pageLocale() {
  const language = document.documentElement.lang;
  const own = (navigator.languages || []).find((wanted) => String(wanted).toLowerCase().split("-")[0] === language);
  return own || language || [];
}

export function seconds(value) {
  if (value < 60) return `${value.toFixed(1)} s`;
  if (value < 3600) return `${Math.floor(value / 60)} min ${Math.floor(value % 60)} s`;
  return `${Math.floor(value / 3600)} h ${Math.floor((value % 3600) / 60)} min`;
}

export function rankText(rank) {
  return rank === "T" ? "10" : rank;
}

/** A card's name in words ("ace of spades"): each rank and suit has its catalogue key
 * (card.rank_A, card.suit_S). */
export function cardName(card) {
  return t("card.name", { rank: t(`card.rank_${card[0]}`, null, card[0]), suit: t(`card.suit_${card[1]}`, null, card[1]) });
}

/** "KH", "kh", "10h", " 10 H ", "K♥" -> "KH"; anything else -> null. */
export function parseCard(text) {
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
export function cardFace(card) {
  if (card === null || card === undefined) {
    return h("span", { class: "card back", testid: "card-back", title: t("card.face_down") },
      h("span", { class: "card-back-pattern", "aria-hidden": "true" }));
  }
  if (typeof card !== "string" || !/^[2-9TJQKA][SHDC]$/.test(card)) {
    // Not a card as the API writes them: shown as it came, as text, marked unknown.
    return h("span", { class: "card unknown", testid: "card", "data-card": String(card), title: t("card.unknown", { card }) },
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

export function cards(list) {
  return h("span", { class: "cards" }, (list || []).map(cardFace));
}

export function pauseKey(table, pause) {
  return `${table}|${pause.since}|${pause.reason}`;
}
