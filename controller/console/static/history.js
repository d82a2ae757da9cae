// A round's history (the dialog and the printable page) and a table's audit, with the events in plain words.

import { getJson } from "./api.js";
import { app, byTestId, cardFace, cards, clock, day, h } from "./common.js";

// --- round history and audit -------------------------------------------------------------------

export function eventSummary(event, game) {
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
    case "round_settled": return settledSummary(d.result || {}, game);
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
export function words(code) {
  return String(code).replace(/_/g, " ");
}

export function settledSummary(result, game) {
  const shown = app.games[game || result.game];
  if (shown && shown.shape === "sides") {
    return h("span", null, `settled: ${result.winner} wins`,
      shown.hands.map((hand, index) => [`${index ? " " : ", "}${hand} ${result[`${hand}_total`]} `, cards(result[hand])]));
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

// --- the camera's pictures beside the cards ------------------------------------------------------

const PICTURE_WORDS = {
  secret: "picture kept secret until the round settles",
  pruned: "picture pruned (its digest stays in the journal)",
  missing: "picture missing",
  tampered: "picture TAMPERED: it no longer matches the journal",
};

/** One picture: its image (linked to the full size), or what became of it, in words. */
export function pictureView(picture, label) {
  if (picture.url) {
    return h("a", { href: picture.url, target: "_blank", rel: "noopener", class: "picture", testid: "history-picture",
      "data-view": picture.view, "data-row": String(picture.row) },
    h("img", { src: picture.url, alt: label, title: `${label} (journal row ${picture.row}, sha256 ${picture.sha256})`,
      class: picture.view === "card" ? "card-picture" : "table-picture" }));
  }
  return h("span", { class: `picture-status picture-${picture.status}`, testid: "history-picture-status",
    "data-status": picture.status }, ` (${PICTURE_WORDS[picture.status] || picture.status})`);
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
  if (answer.unavailable) return h("p", { class: "hint", testid: "history-pictures" }, `Pictures: ${answer.unavailable}`);
  if (!answer.camera) return h("p", { class: "hint", testid: "history-pictures" }, "This table has no camera: no pictures.");
  const used = new Set(matched.values());
  const rest = answer.pictures.filter((picture) => !used.has(picture));
  return h("section", { class: "history-pictures", testid: "history-pictures" },
    h("h3", null, "Pictures"),
    rest.length ? rest.map((picture) => h("figure", null, pictureView(picture, pictureLabel(picture)),
      h("figcaption", null, pictureLabel(picture)))) : h("p", { class: "hint" }, "No other picture."));
}

function pictureLabel(picture) {
  if (picture.view === "card") return `the card at ${picture.slot || picture.position}`;
  return `the table as the round was ${picture.view}`;
}

export function historyView(round) {
  const events = round.events || [];
  const matched = picturesByEvent(events, (round.pictures && round.pictures.pictures) || []);
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
        h("td", null, String(event.seq)), h("td", null, clock(event.at)), h("td", null, event.type),
        h("td", null, eventSummary(event, round.game), matched.has(event) ? [" ", pictureView(matched.get(event), `the card at ${(event.data || {}).position}`)] : null))))),
    picturesSection(round, matched));
}

export async function loadRound(table, roundId, into) {
  into.replaceChildren(h("p", null, "Loading\u2026"));
  try {
    const base = `/api/tables/${encodeURIComponent(table)}/rounds/${encodeURIComponent(roundId)}`;
    // The pictures come with their own request: a table that cannot give them now still
    // shows its round's events.
    const [round, pictures] = await Promise.all([getJson(base),
      getJson(`${base}/pictures`).catch((error) => ({ unavailable: error.message }))]);
    into.replaceChildren(historyView({ ...round, pictures }));
  } catch (error) {
    into.replaceChildren(h("p", { class: "error", testid: "history-error" },
      `Round ${roundId} of ${table} could not be loaded: ${error.message} `,
      h("button", { type: "button", testid: "history-retry", onclick: () => loadRound(table, roundId, into) }, "Try again")));
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

export async function openAudit(table) {
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

export async function startHistoryPage() {
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
  app.games = await getJson("/api/games").catch(() => ({}));
  await loadRound(table, roundId, content);
  document.body.dataset.loaded = "true";
}
