// The pause queue: the paused tables and those that do not answer, oldest first, the resolutions each pause needs, and the undo window of a one-key action.

import { act, answerLine, whyNotResolve } from "./api.js";
import { NOT_ANSWERING, RESOLVED_SHOWN_MS, STATUS_WORD, app, byTestId, clock, h, isSupervisor, pauseKey } from "./common.js";
import { needsWords, pauseWords, t } from "./i18n.js";
import { openPicker } from "./picker.js";
import { patchKeyed, render } from "./stream.js";
import { pausesInEffect } from "./wall.js";

// --- the pause queue -------------------------------------------------------------------------

/** The resolutions a pause offers: exactly what its `needs` ask for (a plain resume when
 * they ask for nothing). Each: [resolution, label, key, testid]. */
export function choicesFor(pause) {
  const needs = pause.needs || [];
  const choices = [];
  const add = (choice) => {
    if (!choices.some((known) => known[3] === choice[3])) choices.push(choice);
  };
  for (const need of needs) {
    if (need.includes("accept or burn")) {
      add(["accept", t("queue.accept"), "a", "resolve-accept"]);
      add(["burn", t("queue.burn"), "b", "resolve-burn"]);
    } else if (need.startsWith("enter_card for")) {
      add(["enter_card", t("queue.enter_card"), "e", "resolve-enter-card"]);
    } else if (need.includes("no_cards_drawn")) {
      add(["no_cards_drawn", t("queue.no_cards_drawn"), "n", "resolve-no-cards-drawn"]);
      add(["enter_card", t("queue.enter_drawn_card"), "e", "resolve-enter-card"]);
    }
  }
  if (needs.length === 0) {
    add(["", t("queue.resume"), "r", "resolve-resume"]);
    // A dealer_idle pause: the card on the felt that the round does not show may be entered.
    if (pause.idle_gap) add(["enter_card", t("queue.enter_felt_card"), "e", "resolve-enter-card"]);
  }
  return choices;
}

export function pausedTables() {
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

export function isPaused(tile) {
  return Boolean(tile.state && tile.state.phase === "PAUSED" && tile.state.pause);
}

/** A table that does not answer and is not paused: it is in the queue all the same. */
export function notAnswering(tile) {
  return NOT_ANSWERING.includes(tile.status) && !isPaused(tile);
}

export function notAnsweringWords(tile) {
  return t("queue.not_answering", { table: tile.table, time: clock(tile.last_message_at) });
}

/** The pause queue: the paused tables and those that do not answer, oldest first. */
export function queueTiles() {
  const since = (tile) => (isPaused(tile) ? tile.state.pause.since : tile.last_message_at) ?? Infinity;
  const down = [...app.tiles.values()].filter(notAnswering);
  return [...pausedTables(), ...down].sort((a, b) => since(a) - since(b) || a.table.localeCompare(b.table));
}

// What a one-key action is doing while its undo window runs ("Burning in 3 s"): its key in
// the catalogue.
export const UNDO_VERB = {
  accept: "queue.undo_accept", burn: "queue.undo_burn", no_cards_drawn: "queue.undo_no_cards", "": "queue.undo_resume",
};

/** A resolution from the pause queue (a key or a click). Entering a card opens the picker
 * (its own confirmation); the others, one key each, wait out the undo window first. */
export function resolve(table, resolution) {
  const tile = app.tiles.get(table);
  if (!tile || !tile.state || !tile.state.pause) return;
  if (whyNotResolve(tile, resolution)) return;
  if (resolution === "enter_card") {
    openPicker(table);
    return;
  }
  const windowS = Number(app.session && app.session.undo_s) || 0;
  if (windowS <= 0) {
    sendResolution(table, resolution);
    return;
  }
  const ms = windowS * 1000;
  app.undo.set(table, {
    resolution, verb: t(UNDO_VERB[resolution] || "queue.undo_send"), until: Date.now() + ms,
    key: pauseKey(table, tile.state.pause), timer: setTimeout(() => undoWindowEnded(table), ms),
  });
  render();
}

/** The window of `table`'s one-key action ended: sent, unless its pause is not the one
 * it was meant for any more (resolved meanwhile, or another). */
export function undoWindowEnded(table) {
  const waiting = app.undo.get(table);
  if (!waiting) return;
  app.undo.delete(table);
  const tile = app.tiles.get(table);
  const pause = tile && tile.state && tile.state.phase === "PAUSED" ? tile.state.pause : null;
  if (!pause || pauseKey(table, pause) !== waiting.key) {
    app.answers.set(`${table}|queue`, {
      ok: false, text: `${clock(Date.now() / 1000)} ${t("queue.not_sent_changed", { table })}`, at: Date.now(),
    });
    render();
    return;
  }
  sendResolution(table, waiting.resolution);
}

/** Take back the one-key action of `table` (or the latest one): nothing is sent. */
export function undo(table) {
  const latest = [...app.undo.entries()].sort((a, b) => b[1].until - a[1].until)[0];
  const name = table || (latest ? latest[0] : null);
  const waiting = name === null ? null : app.undo.get(name);
  if (!waiting) return false;
  clearTimeout(waiting.timer);
  app.undo.delete(name);
  app.answers.set(`${name}|queue`, {
    ok: false, text: `${clock(Date.now() / 1000)} ${t("queue.undone", { table: name })}`, at: Date.now(), undone: true,
  });
  render();
  return true;
}

export function undoLine(table) {
  const waiting = app.undo.get(table);
  if (!waiting) return null;
  return h("p", { class: "undo", testid: "undo", role: "status" },
    h("span", { testid: "undo-words", "data-undo-verb": waiting.verb, "data-undo-until": String(waiting.until) }, ""),
    " \u2014 ",
    h("button", { type: "button", testid: "undo-button", onclick: () => undo(table) }, t("queue.undo_button")));
}

export function sendResolution(table, resolution) {
  const tile = app.tiles.get(table);
  if (!tile || !tile.state || !tile.state.pause) return;
  const pause = tile.state.pause;
  const args = resolution ? { resolution } : {};
  act(table, "queue", "resume", args, (answer) => {
    if (answer.ok) app.resolved.set(table, { pause, key: pauseKey(table, pause), until: Date.now() + RESOLVED_SHOWN_MS });
  });
}

export function queueItem(tile, selected) {
  const pause = tile.state.pause;
  const choices = choicesFor(pause);
  const buttons = isSupervisor()
    ? h("div", { class: "choices", testid: "queue-choices" }, choices.map(([resolution, label, key, testid]) => {
      const why = whyNotResolve(tile, resolution);
      return h("button", {
        type: "button", testid, class: "primary", disabled: why !== null, title: why || t("queue.key_title", { label, key }),
        "data-resolution": resolution,
        onclick: why === null ? () => { select(tile.table); resolve(tile.table, resolution); } : null,
      }, label, " ", h("kbd", null, key));
    }))
    : null;
  return h("li", {
    class: `queue-item${selected ? " selected" : ""}`, testid: `queue-item-${tile.table}`,
    "data-table": tile.table, "data-state": "paused", "data-reason": pause.reason, "aria-current": selected ? "true" : null,
    "data-pause-since": String(pause.since ?? ""),
    onclick: () => { if (app.selected !== tile.table || !app.selectedByHand) { select(tile.table); render(); } },
  },
  h("p", { class: "queue-title", testid: "queue-title" }, h("strong", null, tile.table), " ",
    h("span", { class: "status-word status-paused" }, t("status.paused", null, "PAUSED")), " ",
    tile.status === "offline" ? h("span", { class: "status-word status-offline" }, " ", t("status.offline")) : null),
  h("p", { testid: "queue-message" }, pauseWords(pause)),
  h("p", { class: "meta", testid: "queue-meta" }, t("tile.since_time", { time: clock(pause.since) }),
    h("span", { class: "ago", "data-ago": String(pause.since ?? "") }, ""),
    " ", t("tile.by"), " ", pause.by || tile.paused_by || t("tile.by_the_table"),
    tile.state.round ? ` \u00b7 ${t("tile.round", { round: tile.state.round.id })}` : ""),
  pausesInEffect(tile.state),
  needsWords(tile).length
    ? h("ul", { class: "needs", testid: "queue-needs" }, needsWords(tile).map((need) => h("li", { testid: "queue-need" }, need)))
    : h("p", { class: "needs none", testid: "queue-needs" }, heldBy(tile.state)
      ? t("queue.nothing_held", { by: heldBy(tile.state) })
      : t("queue.nothing")),
  buttons,
  isSupervisor() ? undoLine(tile.table) : null,
  isSupervisor() ? answerLine(tile.table, "queue") : null);
}

/** Who holds the table paused (the supervisors whose pauses are in effect), or "". */
export function heldBy(state) {
  const pauses = (state && state.pauses) || [];
  return pauses.filter((pause) => pause.reason === "supervisor" && pause.by)
    .map((pause) => pause.by).join(", ");
}

/** A table that does not answer: what it is, since when, and what to see to (nothing to
 * send it: nothing would reach it). */
export function notAnsweringItem(tile, selected) {
  return h("li", {
    class: `queue-item not-answering${selected ? " selected" : ""}`, testid: `queue-item-${tile.table}`,
    "data-table": tile.table, "data-state": "not-answering", "data-status": tile.status,
    "aria-current": selected ? "true" : null,
    onclick: () => { if (app.selected !== tile.table || !app.selectedByHand) { select(tile.table); render(); } },
  },
  h("p", { class: "queue-title", testid: "queue-title" }, h("strong", null, tile.table), " ",
    h("span", { class: `status-word status-${tile.status}` }, t(`status.${tile.status}`, null, STATUS_WORD[tile.status]))),
  h("p", { testid: "queue-message" }, notAnsweringWords(tile)),
  h("p", { class: "meta", testid: "queue-meta" },
    tile.status === "offline" ? t("queue.offline_meta") : t("queue.stale_meta"),
    h("span", { class: "ago", "data-ago": String(tile.last_message_at ?? "") }, "")));
}

export function resolvedItem(table, entry) {
  return h("li", { class: "queue-item resolved", testid: `queue-item-${table}`, "data-table": table, "data-state": "resolved" },
    h("p", { class: "queue-title", testid: "queue-title" }, h("strong", null, table), " ",
      t("queue.resumed_was", { was: pauseWords(entry.pause) || t("status.paused") })),
    answerLine(table, "queue"));
}

/** The supervisor selects a pause in the queue: it stays selected while it is paused. */
export function select(table) {
  app.selected = table;
  app.selectedByHand = true;
}

export function renderQueue() {
  const paused = queueTiles();
  if (!app.selectedByHand || !paused.some((tile) => tile.table === app.selected)) {
    app.selected = paused.length ? paused[0].table : null;
    app.selectedByHand = false;
  }
  const list = byTestId("queue-items");
  const items = paused.map((tile) => (isPaused(tile)
    ? queueItem(tile, tile.table === app.selected) : notAnsweringItem(tile, tile.table === app.selected)));
  for (const [table, entry] of app.resolved) {
    if (!paused.some((tile) => tile.table === table)) items.push(resolvedItem(table, entry));
  }
  patchKeyed(list, items);
  byTestId("queue-count").textContent = paused.length ? `(${paused.length})` : "";
  byTestId("queue-empty").hidden = paused.length > 0;
}
