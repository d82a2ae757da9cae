// Redrawing without disturbing a click (the DOM diffing), the live parts, and the event stream that brings each table's tile.

import { currentAnswer, forgetAnswers, getJson, showSession } from "./api.js";
import { markAges } from "./ageing.js";
import { pauseWords, t } from "./i18n.js";
import { announce, beep } from "./audio.js";
import { RECONNECT_MS, SIGNED_OUT_URL, TITLE, app, byTestId, pauseKey, seconds, serverNow } from "./common.js";
import { notifyPause } from "./notify.js";
import { notAnswering, notAnsweringWords, renderQueue } from "./queue.js";
import { heldOrder, orderHeld, renderTile, sortedTiles } from "./wall.js";

// --- redrawing without disturbing a click --------------------------------------------------
//
// A redraw builds fresh elements, then keeps every existing one whose fresh version is the
// same (by its markup when built, before tick() writes live text into it): a button the
// supervisor is pressing stays the same element unless what it does changed. Tiles and
// queue items are matched by table; inside them, each section is kept or replaced whole
// (so a replaced button always comes with its own listener).

export const signatures = new WeakMap();

/** `node` with its signature, and its sections' (what reconcile compares next time). */
export function signed(node) {
  signatures.set(node, node.outerHTML);
  for (const section of node.children) signatures.set(section, section.outerHTML);
  return node;
}

export function copyAttributes(target, source) {
  for (const { name } of [...target.attributes]) {
    if (!source.hasAttribute(name)) target.removeAttribute(name);
  }
  for (const { name, value } of [...source.attributes]) {
    if (target.getAttribute(name) !== value) target.setAttribute(name, value);
  }
}

/** `existing` made to show `fresh` (a tile or a queue item): kept, patched section by
 * section, or `fresh` itself. */
export function reconcile(existing, fresh) {
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
export function replaceIfDifferent(parent, nodes) {
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
export function patchKeyed(parent, fresh) {
  const byKey = new Map([...parent.children].map((node) => [node.getAttribute("data-testid"), node]));
  const nodes = fresh.map((node) => reconcile(byKey.get(node.getAttribute("data-testid")), node));
  replaceIfDifferent(parent, nodes);
}

/** For `livetable bench console`: when a benchmark puts an array in
 * `window.livetableRenders`, each tile drawn with a new state is noted there as
 * {table, seq: the state's journal.seq, at: Date.now() right after the wall was patched}.
 * Nothing is kept
 * otherwise. */
export const drawnSeq = new Map();
export function stampDrawn(tiles) {
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

export let renderQueued = false;
/** Redraw the wall and the queue (at most once per animation frame). */
export function render() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderNow();
  });
}

/** Everything a tile's drawing depends on besides the clock (which tick() writes). A tile
 * whose inputs are all the same objects as when it was last drawn is not built again: with
 * twenty tables a state comes every few milliseconds, and rebuilding the whole wall for each
 * kept the page's one thread too busy to take the next message. */
export function tileInputs(tile) {
  return [
    tile, app.session, app.link.up, app.streamUp, app.openRecent.has(tile.table),
    app.pending.has(`${tile.table}|actions`), app.pending.has(`${tile.table}|queue`),
    currentAnswer(tile.table, "actions"),
  ];
}

export const drawnFrom = new Map(); // table -> [its tileInputs when drawn, its element]
export function sameInputs(a, b) {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/** The tiles' elements in this order: each kept as drawn if its inputs did not change. */
export function patchWall(wall, tiles) {
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

export function renderNow() {
  const wall = byTestId("wall");
  if (!wall) return;
  // Keep the keyboard focus on the same control of the same tile or queue item.
  const active = document.activeElement;
  const holder = active && active.closest ? active.closest("[data-table]") : null;
  const focused = holder && active.dataset.testid
    ? { holder: holder.dataset.testid, control: active.dataset.testid } : null;
  const held = orderHeld(wall);
  const tiles = held ? heldOrder(wall, sortedTiles()) : sortedTiles();
  wall.dataset.order = held ? "held" : "sorted";
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
  const down = tiles.filter(notAnswering).length;
  const counts = [paused ? t("console.count_paused", { n: paused }) : "",
    down ? t("console.count_down", { n: down }) : ""].filter(Boolean);
  const name = t("console.title", null, TITLE);
  const title = counts.length ? `(${counts.join(", ")}) ${name}` : name;
  if (document.title !== title) document.title = title;
  document.body.dataset.stream = app.streamUp ? "up" : "down";
  document.body.dataset.link = app.link.up ? "up" : "down";
  tick();
}

/** The live parts: countdowns, ages. */
export function tick() {
  const now = serverNow();
  markAges(now);
  // Written only where the words change: an unchanged text written again still costs the
  // page a layout, five times a second for every tile.
  const write = (element, text) => { if (element.textContent !== text) element.textContent = text; };
  for (const element of document.querySelectorAll("[data-deadline]")) {
    const left = Number(element.dataset.deadline) - now;
    write(element, left > 0 ? ` ${t("tile.left", { time: seconds(left) })}` : ` ${t("tile.due_now")}`);
    element.classList.toggle("urgent", left < 3);
  }
  for (const element of document.querySelectorAll("[data-last]")) {
    const last = element.dataset.last;
    write(element, last === "" ? t("tile.no_message") : t("tile.last_message", { time: seconds(Math.max(0, now - Number(last))) }));
  }
  for (const element of document.querySelectorAll("[data-undo-until]")) {
    const left = Math.max(1, Math.ceil((Number(element.dataset.undoUntil) - Date.now()) / 1000));
    write(element, t("queue.undo_in", { verb: element.dataset.undoVerb, n: left }));
  }
  for (const element of document.querySelectorAll("[data-ago]")) {
    const since = element.dataset.ago;
    write(element, since === "" ? "" : ` (${t("tile.ago", { time: seconds(Math.max(0, now - Number(since))) })})`);
  }
}

/** A tile from the stream or from /api/tables. `live`: a pause this page has not seen
 * yet beeps (false for the page's first load: what is paused then is in the queue). A
 * pause seen before never beeps again, whatever comes again after a reconnect. */
export function applyTile(tile, live) {
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
        announce(t("console.announce_pause", { table: tile.table, words: pauseWords(pause) }));
        notifyPause(tile.table, pause);
      }
    }
  }
  // A table that stopped answering is said as a pause is, once; unknown (the console's
  // own link down) tells nothing of it either way.
  if (notAnswering(tile)) {
    if (!app.down.has(tile.table)) {
      app.down.add(tile.table);
      if (live) {
        beep();
        announce(notAnsweringWords(tile));
      }
    }
  } else if (tile.status !== "unknown") {
    app.down.delete(tile.table);
  }
  if (tile.state && tile.state.round) app.lastRound.set(tile.table, tile.state.round.id);
  app.tiles.set(tile.table, tile);
}

export async function reloadTables() {
  // A tile the stream brought while this snapshot was on its way is at least as new as
  // the snapshot's (the stream brings every later change too): the snapshot's older copy
  // must not overwrite it (a table killed meanwhile stayed RUNNING on the wall).
  const asked = app.streamTiles;
  const answer = await getJson("/api/tables");
  if (typeof answer.now === "number") app.clockOffset = answer.now - Date.now() / 1000;
  if (answer.link) app.link = answer.link;
  if (Array.isArray(answer.order)) app.statusOrder = answer.order;
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

export function connectStream() {
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
