// A round's history (the dialog and the printable page) and a table's audit, with the events in plain words.

import { getJson } from "./api.js";
import { app, byTestId, cardFace, cards, clock, day, h } from "./common.js";
import { choiceWords, chooseLanguage, codedWords, commandWords, loadLanguage, pauseWords, positionWords, refusalWords, t, translatePage } from "./i18n.js";

// --- round history and audit -------------------------------------------------------------------

/** A resolution, a card's source, ... by its code's words (the code's plain words when a
 * catalogue has none: a table of a newer livetable). */
const coded = (prefix, code) => t(`${prefix}.${code}`, null, words(code));

export function eventSummary(event, game) {
  const d = event.data || {};
  switch (event.type) {
    case "round_opened":
      return t("history.round_opened", { round: d.round_id, number: d.round_number, shoe: d.shoe_id, closes: clock(d.betting_closes_at) });
    case "betting_closed": return t("history.betting_closed", { round: d.round_id });
    case "card_dealt":
      return h("span", null, `${t("history.card_dealt", { position: positionWords(d.position) })} `, d.face_down ? cardFace(null) : cardFace(d.card),
        h("span", { class: `source source-${d.source}` }, ` ${t("history.from", { source: coded("source", d.source) })}`));
    case "hole_card_read":
      return h("span", null, `${t("history.hole_card_read", { position: positionWords(d.position), source: coded("source", d.source) })} `,
        d.card ? cardFace(d.card) : "");
    case "decision_requested":
      return t("history.decision_requested", {
        kind: t(`decision.${d.kind}`, null, d.kind), box: d.box, hand: d.hand,
        options: (d.options || []).map(choiceWords).join("/"), default: choiceWords(d.default),
      });
    case "decision_taken": {
      const values = { decision: choiceWords(d.decision), box: d.box, hand: d.hand };
      return d.auto ? t("history.decision_taken_auto", values) : t("history.decision_taken", values);
    }
    case "table_paused": {
      // A supervisor's pause is the reason they typed; any other, its reason's words.
      const why = pauseWords(d);
      return d.by ? t("history.paused_by", { by: d.by, why }) : t("history.paused", { why });
    }
    case "table_resumed":
      return d.resolution ? t("history.resumed_with", { by: d.by, resolution: coded("resolution", d.resolution) }) : t("history.resumed", { by: d.by });
    case "cards_burned": return t("history.cards_burned", { count: d.count });
    case "round_settled": return settledSummary(d.result || {}, game);
    case "round_voided":
      return d.reason
        ? t("history.round_voided_why", { round: d.round_id, by: d.by, why: d.reason, count: d.cards_discarded })
        : t("history.round_voided", { round: d.round_id, by: d.by, count: d.cards_discarded });
    case "shoe_started": return t("history.shoe_started", { shoe: d.shoe_id, by: d.by });
    // Why a shoe ended: its code's words (the table's English without one). Why it went
    // offline is the driver's own English: it publishes no code.
    case "shoe_ended":
      return t("history.shoe_ended", { shoe: d.shoe_id, why: codedWords("shoe_end", d.why_code, { by: d.by }, d.why) });
    case "cut_card_drawn": return t("history.cut_card_drawn", { round: d.final_round });
    case "shoe_offline": return t("history.shoe_offline", { why: d.reason });
    case "shoe_online": return t("history.shoe_online");
    // Any other event: its name in words and the table's own message, never its JSON.
    default: return `${eventName(event.type)}${typeof d.message === "string" ? `: ${d.message}` : ""}`;
  }
}

/** An event's name in words (its type's, or the type's plain words for a newer table's). */
export const eventName = (type) => coded("event", type);

/** A machine word (`no_cards_drawn`) as people write it ("no cards drawn"). */
export function words(code) {
  return String(code).replace(/_/g, " ");
}

export function settledSummary(result, game) {
  const shown = app.games[game || result.game];
  if (shown && shown.shape === "sides") {
    return h("span", null, t("history.settled_winner", { hand: positionWords(result.winner) }),
      shown.hands.map((hand, index) => [`${index ? " " : ", "}${positionWords(hand)} ${result[`${hand}_total`]} `, cards(result[hand])]));
  }
  const parts = [];
  if (result.dealer) {
    const extra = [result.dealer.busted ? t("hand.busted") : "", result.dealer.blackjack ? t("hand.blackjack") : ""].filter(Boolean);
    parts.push(`${t("history.settled_dealer", { total: result.dealer.total })}${extra.map((word) => ` ${word}`).join("")} `,
      cards(result.dealer.cards));
  }
  for (const box of result.boxes || []) parts.push(` ${t("history.box_net", { box: box.box, net: box.net })}`);
  if (result.player_cards) parts.push(` ${t("history.players")} `, cards(result.player_cards));
  return h("span", null, parts.length ? parts : t("history.settled"));
}

// --- the camera's pictures beside the cards ------------------------------------------------------

/** One picture: its image (linked to the full size), or what became of it, in words. */
export function pictureView(picture, label) {
  if (picture.url) {
    return h("a", { href: picture.url, target: "_blank", rel: "noopener", class: "picture", testid: "history-picture",
      "data-view": picture.view, "data-row": String(picture.row) },
    h("img", { src: picture.url, alt: label, title: t("picture.title", { label, row: picture.row, sha256: picture.sha256 }),
      class: picture.view === "card" ? "card-picture" : "table-picture" }));
  }
  return h("span", { class: `picture-status picture-${picture.status}`, testid: "history-picture-status",
    "data-status": picture.status }, ` (${coded("picture", picture.status)})`);
}

/** Each card_dealt event's picture: the k-th card dealt to a hand is its k-th card picture. */
export function picturesByEvent(events, pictures) {
  const byPosition = new Map();
  for (const picture of pictures.filter((each) => each.view === "card")) {
    if (!byPosition.has(picture.position)) byPosition.set(picture.position, []);
    byPosition.get(picture.position).push(picture);
  }
  const matched = new Map();
  for (const event of events) {
    if (event.type !== "card_dealt") continue;
    const queue = byPosition.get((event.data || {}).position) || [];
    if (queue.length) matched.set(event, queue.shift());
  }
  return matched;
}

function picturesSection(round, matched) {
  const answer = round.pictures;
  if (!answer) return null;
  if (answer.unavailable) {
    return h("p", { class: "hint", testid: "history-pictures" }, t("picture.unavailable", { why: answer.unavailable }));
  }
  if (!answer.camera) return h("p", { class: "hint", testid: "history-pictures" }, t("picture.no_camera"));
  const used = new Set(matched.values());
  const rest = answer.pictures.filter((picture) => !used.has(picture));
  return h("section", { class: "history-pictures", testid: "history-pictures" },
    h("h3", null, t("picture.heading")),
    rest.length ? rest.map((picture) => h("figure", null, pictureView(picture, pictureLabel(picture)),
      h("figcaption", null, pictureLabel(picture)))) : h("p", { class: "hint" }, t("picture.no_other")));
}

const cardPictureLabel = (position) => t("picture.card_at", { position: positionWords(position) });

function pictureLabel(picture) {
  if (picture.view === "card") return picture.slot ? t("picture.card_at", { position: picture.slot }) : cardPictureLabel(picture.position);
  return t("picture.table_as", { moment: coded("picture.moment", picture.view) });
}

export function historyView(round) {
  const events = round.events || [];
  const matched = picturesByEvent(events, (round.pictures && round.pictures.pictures) || []);
  const end = events.find((event) => event.type === "round_settled" || event.type === "round_voided");
  const outcome = !end ? t("history.in_play") : end.type === "round_voided" ? t("history.void") : t("history.settled");
  // The round's dealer, as round_settled (or round_opened) names it (older tables name none).
  const named = [...events].reverse().find((event) => event.data && typeof event.data.dealer === "string");
  const span = events.length
    ? t("history.span", { count: events.length, day: day(events[0].at), from: clock(events[0].at), to: clock(events[events.length - 1].at) })
    : t("history.no_events");
  return h("div", { class: "history-view", testid: "history-view" },
    // The printable page's main heading; a heading within the wall's dialog.
    h(document.body.dataset.page === "history" ? "h1" : "h2", { testid: "history-title" },
      named ? t("history.title_dealer", { table: round.table, round: round.round_id, outcome, dealer: named.data.dealer })
        : t("history.title", { table: round.table, round: round.round_id, outcome })),
    h("p", { class: "hint", testid: "history-span" }, span),
    h("table", { class: "events", testid: "history-events" },
      h("thead", null, h("tr", null, h("th", null, t("history.column_seq")), h("th", null, t("history.column_time")),
        h("th", null, t("history.column_event")), h("th", null, t("history.column_details")))),
      h("tbody", null, events.map((event) => h("tr", { testid: "history-row", "data-type": event.type, "data-seq": String(event.seq) },
        h("td", null, String(event.seq)), h("td", null, clock(event.at)), h("td", null, eventName(event.type)),
        h("td", null, eventSummary(event, round.game), matched.has(event)
          ? [" ", pictureView(matched.get(event), cardPictureLabel((event.data || {}).position))] : null))))),
    picturesSection(round, matched));
}

export async function loadRound(table, roundId, into) {
  into.replaceChildren(h("p", null, t("history.loading")));
  try {
    const base = `/api/tables/${encodeURIComponent(table)}/rounds/${encodeURIComponent(roundId)}`;
    // The pictures come with their own request: a table that cannot give them now still
    // shows its round's events.
    const [round, pictures] = await Promise.all([getJson(base),
      getJson(`${base}/pictures`).catch((error) => ({ unavailable: error.message }))]);
    into.replaceChildren(historyView({ ...round, pictures }));
  } catch (error) {
    into.replaceChildren(h("p", { class: "error", testid: "history-error" },
      `${t("history.load_failed", { round: roundId, table, why: error.message })} `,
      h("button", { type: "button", testid: "history-retry", onclick: () => loadRound(table, roundId, into) }, t("history.retry"))));
  }
}

export function lastRoundId(tile) {
  if (tile.state && tile.state.round) return tile.state.round.id;
  // The last round this page saw in play, or one the recent events name (a page opened
  // after the round ended).
  const ids = (tile.recent || []).map((event) => event.data && event.data.round_id).filter((id) => Number.isInteger(id));
  if (app.lastRound.has(tile.table)) ids.push(app.lastRound.get(tile.table));
  return ids.length ? Math.max(...ids) : null;
}

export function printableHref(table, roundId) {
  return `/history?table=${encodeURIComponent(table)}&round=${encodeURIComponent(roundId)}`;
}

export const historyState = { table: null };

export function openHistory(table) {
  const tile = app.tiles.get(table);
  const dialog = byTestId("history-dialog");
  const input = byTestId("history-round");
  historyState.table = table;
  byTestId("history-table").textContent = t("history.of_table", { table });
  const last = tile ? lastRoundId(tile) : null;
  input.value = last === null ? "" : String(last);
  byTestId("history-content").replaceChildren(h("p", { class: "hint" }, last === null ? t("history.no_round_seen") : ""));
  byTestId("history-printable").hidden = last === null;
  if (last !== null) {
    byTestId("history-printable").setAttribute("href", printableHref(table, last));
    loadRound(table, last, byTestId("history-content"));
  }
  dialog.showModal();
}

export function setUpHistory() {
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

/** A command's arguments in words: each field's name (its catalogue key, as the API's list
 * of commands names them), then its value (a resolution's in words, others as given). */
function argsWords(args) {
  return Object.entries(args).map(([name, value]) => {
    const shown = name === "resolution" && typeof value === "string" ? (value ? coded("resolution", value) : "")
      : typeof value === "object" ? JSON.stringify(value) : String(value);
    return `${t(`field.${name}`, null, words(name))}: ${shown}`;
  }).join("; ");
}

export async function openAudit(table) {
  const dialog = byTestId("audit-dialog");
  const content = byTestId("audit-content");
  byTestId("audit-table").textContent = t("history.of_table", { table });
  const csv = byTestId("audit-csv");
  csv.setAttribute("href", `/api/tables/${encodeURIComponent(table)}/audit.csv`);
  csv.setAttribute("download", `audit-${table}.csv`);
  content.replaceChildren(h("p", null, t("history.loading")));
  dialog.showModal();
  try {
    const answer = await getJson(`/api/tables/${encodeURIComponent(table)}/audit`);
    // Newest first: what a supervisor looks for is what was just done. The console lists
    // them in the journal's order (the CSV keeps it).
    const entries = (answer.entries || []).slice().reverse();
    // The CSV's columns, in its order (the time as this browser's), then any others.
    const columns = ["journal_seq", "at", "account", "role", "command", "args", "ok", "code", "message", "transaction"];
    // The message's code and values are not columns: the message is shown in their words.
    const inMessage = ["message_code", "message_values"];
    for (const entry of entries) {
      for (const key of Object.keys(entry)) if (!columns.includes(key) && !inMessage.includes(key)) columns.push(key);
    }
    const shown = columns.filter((column) => entries.some((entry) => column in entry));
    // The known columns by their words; a newer table's by its name.
    const heading = (column) => t(`audit.column_${column}`, null, column);
    const cell = (column, value, entry) => {
      if (column === "at" && typeof value === "number") return `${day(value)} ${clock(value)}`;
      // The table's answer in its code's words (its English for a code no catalogue has).
      if (column === "message" && typeof value === "string") {
        return codedWords("answer_message", entry.message_code, entry.message_values, value);
      }
      if (column === "command" && typeof value === "string") return commandWords(value);
      if (column === "role" && typeof value === "string") return t(`role.${value}`, null, value);
      if (column === "ok" && typeof value === "boolean") return value ? t("audit.ok_yes") : t("audit.ok_no");
      // A refusal's code as its words (the message beside it is the table's English).
      if (column === "code" && typeof value === "string") return value ? refusalWords(value, value) : "";
      if (column === "args" && value !== null && typeof value === "object" && !Array.isArray(value)) return argsWords(value);
      if (value !== null && typeof value === "object") return JSON.stringify(value);
      return value === null || value === undefined ? "" : String(value);
    };
    content.replaceChildren(entries.length
      ? h("table", { class: "events audit-table", testid: "audit-entries" },
        h("thead", null, h("tr", null, shown.map((column) => h("th", null, heading(column))))),
        h("tbody", null, entries.map((entry) => h("tr", {
          testid: "audit-row", class: entry.ok === false ? "refused" : null,
        }, shown.map((column) => h("td", { "data-column": column }, cell(column, entry[column], entry)))))))
      : h("p", { class: "hint" }, t("audit.empty")));
  } catch (error) {
    content.replaceChildren(h("p", { class: "error" }, t("audit.load_failed", { why: error.message })));
  }
}

export async function startHistoryPage() {
  const query = new URLSearchParams(window.location.search);
  const table = query.get("table") || "";
  const roundId = query.get("round") || "";
  const content = byTestId("history-content");
  const print = byTestId("history-print");
  if (print) print.addEventListener("click", () => window.print());
  // The language: this browser's choice, else the console's setting, else the browser's
  // (a session that cannot be read leaves the last two to choose).
  const session = await getJson("/api/session").catch(() => ({}));
  await loadLanguage(chooseLanguage(session.language));
  translatePage();
  document.title = t("history.page_title", { table, round: roundId });
  if (!table || !/^\d+$/.test(roundId)) {
    content.replaceChildren(h("p", { class: "error" }, t("history.name_a_round")));
    return;
  }
  app.games = await getJson("/api/games").catch(() => ({}));
  await loadRound(table, roundId, content);
  document.body.dataset.loaded = "true";
}
