// The card picker: a card typed as people write it, among the faces still possible.

import { act, getJson } from "./api.js";
import { RANKS, RESOLVED_SHOWN_MS, SUITS, SUIT_SYMBOL, app, byTestId, cardName, h, parseCard, pauseKey, rankText } from "./common.js";
import { needsWords, pauseWords, t } from "./i18n.js";

// --- the card picker -------------------------------------------------------------------------

export const picker = { table: null, possible: [], complete: true };

export function pickerUpdate() {
  const input = byTestId("card-input");
  const parse = byTestId("card-parse");
  const submit = byTestId("card-submit");
  const text = input.value.trim();
  const card = parseCard(text);
  let ok = false;
  parse.classList.remove("error");
  if (!text) {
    parse.textContent = t("picker.type");
  } else if (!card) {
    parse.textContent = t("picker.not_a_card", { text });
    parse.classList.add("error");
  } else if (!picker.possible.includes(card)) {
    parse.textContent = t("picker.used_up", { card: `${rankText(card[0])}${SUIT_SYMBOL[card[1]]}` });
    parse.classList.add("error");
  } else {
    parse.textContent = t("picker.card", { card: `${rankText(card[0])}${SUIT_SYMBOL[card[1]]}`, name: cardName(card) });
    ok = true;
  }
  submit.disabled = !ok;
  submit.dataset.card = ok ? card : "";
  for (const button of byTestId("card-faces").querySelectorAll("button")) {
    button.classList.toggle("chosen", button.dataset.card === card);
  }
}

export async function openPicker(table) {
  const tile = app.tiles.get(table);
  if (!tile || !tile.state || !tile.state.pause) return;
  const dialog = byTestId("card-picker");
  const input = byTestId("card-input");
  const faces = byTestId("card-faces");
  picker.table = table;
  picker.possible = [];
  byTestId("card-picker-title").textContent = t("picker.title", { table });
  // What the pause needs in the catalogue's words (the tile's codes), else its reason's.
  byTestId("card-picker-need").textContent = needsWords(tile).join("; ") || pauseWords(tile.state.pause);
  showLivePicture(table, tile.state);
  byTestId("card-faces-note").textContent = t("picker.loading");
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
      ? t("picker.only_possible")
      : t("picker.maybe_used_up");
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
    byTestId("card-faces-note").textContent = t("picker.load_failed", { why: error.message });
  }
}

/** The camera's picture, now, of the slot whose card must be entered (a misread the camera
 * could not read), beside the picker; nothing when the table has none to show. */
export async function showLivePicture(table, state) {
  const need = byTestId("card-picker-need");
  let figure = byTestId("card-live");
  if (!figure) {
    figure = h("figure", { class: "live-picture", testid: "card-live" });
    need.after(figure);
  }
  figure.hidden = true;
  figure.replaceChildren();
  // The table answers with a picture only while a card of the round in play waits at a
  // camera slot; otherwise the figure stays hidden.
  const roundId = state.round ? state.round.id : null;
  if (!Number.isInteger(roundId)) return;
  try {
    const answer = await getJson(`/api/tables/${encodeURIComponent(table)}/rounds/${roundId}/live`);
    if (!answer.picture || picker.table !== table) return;
    figure.replaceChildren(
      h("img", { src: answer.url, alt: t("picker.live_alt"), testid: "card-live-image" }),
      h("figcaption", null, t("picker.live_caption")));
    figure.hidden = false;
  } catch {
    // No picture: the picker works without it.
  }
}

export function setUpPicker() {
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
