// The wall: a table's tile (hands, awaiting, the devices' health, pauses, actions) and the wall's order (the server's, held while the pointer or the keyboard is on it).

import { act, actionButton, answerLine } from "./api.js";
import { NO_SHOE_WORD, STATUS_WORD, app, cards, clock, h, isSupervisor } from "./common.js";
import { askCancel, askEndShoe, askNewShoe, askPause } from "./dialogs.js";
import { eventSummary, openAudit, openHistory } from "./history.js";
import { choiceWords, dealerLineWords, gameWords, pauseWords, positionWords, t } from "./i18n.js";

// --- a tile ----------------------------------------------------------------------------------

export function shoeLine(state) {
  const shoe = state.shoe || {};
  if (shoe.id === null || shoe.id === undefined) return t("tile.no_shoe");
  const parts = [t("tile.shoe", { shoe: shoe.id }), t("tile.round", { round: shoe.round_number }),
    t("tile.cards_left", { count: shoe.cards_left })];
  if (shoe.cut_card_seen) {
    parts.push(shoe.final_round ? t("tile.cut_card_last", { round: shoe.final_round }) : t("tile.cut_card_out"));
  } else {
    parts.push(t("tile.cut_card_not_seen"));
  }
  return parts.join(" \u00b7 ");
}

export function total(value, soft) {
  if (value === null || value === undefined) return "";
  return soft ? t("tile.soft", { total: value }) : String(value);
}

export function handRow(label, handCards, totalText, extra, words) {
  return h("div", { class: "hand", testid: "hand", "data-position": label },
    h("span", { class: "hand-label" }, words || positionWords(label)),
    cards(handCards),
    h("span", { class: "hand-total", testid: "hand-total" }, totalText),
    extra ? h("span", { class: "hand-extra" }, extra) : null);
}

export function handsView(state) {
  const round = state.round;
  if (!round) return null;
  const view = round.view;
  if (!view) {
    return h("div", { class: "hands", testid: "tile-hands" },
      h("p", { class: "betting" }, state.phase === "BETTING"
        ? t("tile.round_betting", { round: round.id }) : t("tile.round_no_card", { round: round.id })));
  }
  const rows = [];
  // Each game's hands as the game declares them (served by /api/games), never guessed.
  const shown = app.games[view.game];
  if (shown && shown.shape === "sides") {
    for (const hand of shown.hands) rows.push(handRow(hand, view[hand], String(view[`${hand}_total`] ?? "")));
    if (view.complete && view.winner) {
      rows.push(h("p", { class: "winner" }, t("tile.winner", { hand: positionWords(view.winner) })));
    }
  } else if (shown && view.dealer) {
    rows.push(handRow("dealer", view.dealer.cards, total(view.dealer.total, view.dealer.soft)));
    if (view.player) {
      rows.push(handRow("players", view.player.cards,
        total(view.player.sequence_total ?? view.player.initial_total, view.player.soft), null, t("tile.players")));
    }
    for (const box of view.boxes || []) {
      (box.hands || []).forEach((hand, index) => {
        const label = box.hands.length > 1 ? `box${box.box}.${index + 1}` : `box${box.box}`;
        const extra = [hand.state !== "playing" ? t(`hand.${hand.state}`, null, hand.state) : "",
          hand.doubled ? t("hand.doubled") : "", box.insurance ? t("hand.insured") : ""]
          .filter(Boolean).join(", ");
        const words = box.hands.length > 1
          ? positionWords(`box${box.box}.hand${index + 1}`) : positionWords(`box${box.box}`);
        rows.push(handRow(label, hand.cards, total(hand.total, hand.soft), extra, words));
      });
    }
  }
  return h("div", { class: "hands", testid: "tile-hands" }, h("p", { class: "round-id" }, t("tile.round", { round: round.id })), rows);
}

export function awaitingText(awaiting) {
  if (!awaiting) return t("tile.awaiting_nothing");
  switch (awaiting.what) {
    case "card": {
      const key = awaiting.face_down ? "tile.awaiting_card_face_down" : "tile.awaiting_card";
      return t(key, { position: positionWords(awaiting.position) });
    }
    case "decision": {
      const options = (awaiting.options || []).map(choiceWords).join("/");
      return t("tile.awaiting_decision", {
        kind: t(`decision.${awaiting.kind}`, null, awaiting.kind), box: awaiting.box, hand: awaiting.hand,
        options, default: choiceWords(awaiting.default),
      });
    }
    case "camera": return t("tile.awaiting_camera", { position: positionWords(awaiting.position) });
    case "burn": return t("tile.awaiting_burn", { count: awaiting.cards });
    default: return t(`tile.awaiting_${awaiting.what}`, null, String(awaiting.what));
  }
}

export function awaitingView(state) {
  const awaiting = state.awaiting;
  const deadline = state.round ? state.round.deadline : null;
  return h("p", { class: "awaiting", testid: "tile-awaiting" },
    h("span", { class: "label" }, t("tile.awaiting"), " "),
    awaitingText(awaiting),
    deadline !== null && deadline !== undefined && ["BETTING", "DECIDING"].includes(state.phase)
      ? h("span", { class: "countdown", testid: "tile-countdown", "data-deadline": String(deadline) }, "")
      : null);
}

/** The shoe's and the camera's health as the table's state says it: the shoe online,
 * offline or unknown; the camera reading, none (not fitted, or not reported yet) or
 * offline; both unknown while the table is offline (what it last said of them is no
 * news of them now). */
export function health(state, tableOffline) {
  if (tableOffline) return { shoe: "unknown", camera: "unknown" };
  const devices = (state && state.devices) || {};
  const word = (online, up, none) => (online === true ? up : online === false ? "offline" : none);
  return {
    shoe: word(devices.shoe_online, "online", "unknown"),
    camera: word(devices.camera_online, "reading", "none"),
  };
}

export const HEALTH_WORDS = {
  shoe: { online: "shoe online", offline: "shoe offline", unknown: "shoe unknown" },
  camera: { reading: "camera reading", none: "no camera", offline: "camera offline", unknown: "camera unknown" },
};
export const HEALTH_CLASS = { online: "up", reading: "up", offline: "down", none: "none", unknown: "none" };

/** The devices at a glance, in a tile's head: a word and a dot each (never colour alone). */
export function healthView(state, tableOffline) {
  const now = health(state, tableOffline);
  const devices = (state && state.devices) || {};
  const device = (name, online) => h("span", {
    class: `device ${HEALTH_CLASS[now[name]]}`, testid: `device-${name}`, "data-health": now[name],
    "data-online": tableOffline ? "unknown" : String(online),
    title: tableOffline ? t(`health.${name}_offline_table`) : null,
  }, h("span", { class: "dot", "aria-hidden": "true" }), t(`health.${name}_${now[name]}`, null, HEALTH_WORDS[name][now[name]]));
  return h("span", { class: "devices", testid: "tile-devices" },
    device("shoe", devices.shoe_online), device("camera", devices.camera_online));
}

export function pauseView(tile) {
  const pause = tile.state && tile.state.pause;
  if (!pause) return null;
  const by = pause.by || tile.paused_by;
  // The reason code is for programs (data-reason); a person reads the table's message.
  return h("div", { class: "pause-box", testid: "tile-pause", "data-reason": pause.reason },
    h("p", { class: "pause-word" }, t("status.paused", null, "PAUSED")),
    h("p", { testid: "pause-message" }, pauseWords(pause)),
    h("p", null, h("span", { class: "label" }, t("tile.since"), " "),
      h("span", { testid: "pause-since", "data-since": String(pause.since ?? "") }, clock(pause.since)),
      h("span", { class: "ago", "data-ago": String(pause.since ?? "") }, ""),
      h("span", { class: "label" }, " ", t("tile.by"), " "),
      h("span", { testid: "pause-by" }, by ? by : t("tile.by_the_table"))),
    pausesInEffect(tile.state));
}

/** Every pause in effect when there are several (a supervisor's, and anomalies during
 * it): each with its reason, who set it and since when. A supervisor's holds the table
 * until a plain resume, whatever is resolved within it. */
export function pausesInEffect(state) {
  const pauses = (state && state.pauses) || [];
  if (pauses.length < 2) return null;
  return h("ul", { class: "pauses", testid: "pauses" }, pauses.map((pause) =>
    h("li", { testid: "pauses-item", "data-reason": pause.reason, "data-by": pause.by || "" },
      h("span", { testid: "pauses-message" }, pauseWords(pause)), " \u00b7 ",
      h("span", { testid: "pauses-by" }, pause.by ? t("tile.paused_by", { by: pause.by }) : t("tile.by_the_table")),
      " ", t("tile.since_time", { time: clock(pause.since) }))));
}

export function recentView(tile) {
  const recent = tile.recent || [];
  if (!recent.length) return null;
  const details = h("details", { class: "recent", testid: "tile-recent" },
    h("summary", null, t("tile.last_events", { count: recent.length })),
    // A region that scrolls is reachable by keyboard (tabindex) and named for it.
    h("ol", { tabindex: "0", "aria-label": t("tile.last_events_label", { table: tile.table }) }, recent.slice().reverse().map((event) =>
      h("li", null, h("span", { class: "seq" }, `#${event.seq} ${clock(event.at)} `), eventSummary(event, tile.state && tile.state.game)))));
  details.open = app.openRecent.has(tile.table);
  details.addEventListener("toggle", () => {
    if (details.open) app.openRecent.add(tile.table);
    else app.openRecent.delete(tile.table);
  });
  return details;
}

export function tileActions(tile) {
  const state = tile.state || {};
  const round = state.round;
  const shoeId = state.shoe ? state.shoe.id : null;
  return h("div", { class: "actions", testid: "tile-actions" },
    actionButton(tile, "open_round", t("tile.open_round"), "action-open-round",
      () => act(tile.table, "actions", "open_round", {})),
    actionButton(tile, "pause", t("tile.pause"), "action-pause", () => askPause(tile.table)),
    actionButton(tile, "cancel", round ? t("tile.cancel_round_n", { round: round.id }) : t("tile.cancel_round"),
      "action-cancel", () => askCancel(tile.table)),
    actionButton(tile, "end_shoe", t("tile.end_shoe"), "action-end-shoe", () => askEndShoe(tile.table, shoeId)),
    actionButton(tile, "new_shoe", t("tile.new_shoe"), "action-new-shoe", () => askNewShoe(tile.table, shoeId)));
}

export function renderTile(tile) {
  const state = tile.state;
  const status = tile.status || "unknown";
  const tableOffline = status === "offline" || tile.availability === "offline";
  const noShoe = status === "running" && state && state.phase === "AWAITING_SHUFFLE";
  const badge = noShoe ? "no-shoe" : status;
  const header = h("header", { class: "tile-head", testid: "tile-head" },
    h("h3", { testid: "tile-id" }, tile.table),
    h("span", { class: `status-word status-${badge}`, testid: "tile-status", "data-badge": badge },
      noShoe ? t("status.no_shoe", null, NO_SHOE_WORD) : t(`status.${status}`, null, STATUS_WORD[status] || status.toUpperCase())),
    state ? h("span", { class: "game", testid: "tile-game", "data-game": state.game }, gameWords(state.game, state.variant)) : null,
    state ? h("span", { class: "phase", testid: "tile-phase", "data-phase": state.phase }, t(`phase.${state.phase}`, null, state.phase)) : null,
    state ? healthView(state, tableOffline) : null);
  const body = [];
  if (status === "offline") {
    body.push(h("p", { class: "offline-word", testid: "tile-offline" }, t("tile.offline")));
  }
  if (status === "unknown") {
    body.push(h("p", { class: "unknown-word", testid: "tile-unknown" }, t("tile.unknown")));
  }
  if (status === "stale") {
    body.push(h("p", { class: "stale-word", testid: "tile-stale" }, t("tile.stale")));
  }
  if (state) {
    body.push(pauseView(tile));
    body.push(h("p", { class: "shoe", testid: "tile-shoe" }, shoeLine(state)));
    body.push(handsView(state));
    body.push(awaitingView(state));
    if (tile.dealer && tile.dealer.message) {
      body.push(h("p", { class: "dealer-line", testid: "tile-dealer" },
        h("span", { class: "label" }, t("tile.dealer"), " "), dealerLineWords(tile.dealer, state)));
    }
  } else {
    body.push(h("p", { class: "hint", testid: "tile-no-state" }, t("tile.no_state")));
  }
  body.push(h("p", { class: "age", testid: "tile-age", "data-last": String(tile.last_message_at ?? "") }, ""));
  body.push(recentView(tile));
  if (isSupervisor()) {
    body.push(tileActions(tile));
    body.push(answerLine(tile.table, "actions"));
  }
  body.push(h("div", { class: "views", testid: "tile-views" },
    h("button", { type: "button", testid: "action-history", onclick: () => openHistory(tile.table) }, t("tile.history")),
    h("button", { type: "button", testid: "action-audit", onclick: () => openAudit(tile.table) }, t("tile.audit"))));
  return h("article", {
    class: `tile status-${status}`, testid: `tile-${tile.table}`, "data-table": tile.table,
    "data-status": status, "data-phase": state ? state.phase : "",
    "data-pause-since": status === "paused" && state && state.pause ? String(state.pause.since ?? "") : null,
  }, header, body);
}

// --- the wall --------------------------------------------------------------------------------

/** `tiles` most urgent first, in the server's order of statuses, then by table id. */
export function wallOrder(tiles, order = app.statusOrder) {
  const rank = (status) => {
    const index = order.indexOf(status);
    return index < 0 ? order.length : index;
  };
  return [...tiles].sort((a, b) => rank(a.status) - rank(b.status) || a.table.localeCompare(b.table));
}

export function sortedTiles() {
  return wallOrder(app.tiles.values());
}

/** Whether the wall's order is held: a tile that moves as the supervisor reaches for it
 * takes the click meant for another, and the keyboard's place would jump with it. The
 * focus a click leaves on a button holds nothing (it would hold the wall until the next
 * click elsewhere): only the keyboard's (:focus-visible) does. */
export function orderHeld(wall) {
  const active = document.activeElement;
  const keyboardInTile = active !== wall && wall.contains(active) && active.matches(":focus-visible");
  return app.pointerOnWall || keyboardInTile;
}

/** The tiles in the order the wall shows them now, a new table at the end. */
export function heldOrder(wall, sorted) {
  const byTable = new Map(sorted.map((tile) => [tile.table, tile]));
  const shown = [...wall.children].map((node) => byTable.get(node.dataset.table)).filter(Boolean);
  const placed = new Set(shown.map((tile) => tile.table));
  return [...shown, ...sorted.filter((tile) => !placed.has(tile.table))];
}
