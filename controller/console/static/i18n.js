// The pages' words in the studio's language: one catalogue per language (i18n/<code>.json,
// data, no code), keyed by the codes the tables' API publishes (pause reasons, needs,
// refusals, the dealer's actions) and by the pages' own keys. A table's English `message`
// is shown only where a catalogue has no words for its code.
//
// The language: the one chosen on this browser (stored), else the console's setting
// ([console] language, in /api/session), else the browser's own, else English.

export const LANGUAGES = ["en", "es"];
export const DEFAULT_LANGUAGE = "en";
const STORED = "livetable.language";

const state = { language: DEFAULT_LANGUAGE, words: {}, english: {} };

/** The language to speak: stored here, the console's setting, the browser's, English. */
export function chooseLanguage(setting) {
  const stored = window.localStorage.getItem(STORED);
  if (LANGUAGES.includes(stored)) return stored;
  if (LANGUAGES.includes(setting)) return setting;
  for (const wanted of navigator.languages || [navigator.language || ""]) {
    const base = String(wanted).toLowerCase().split("-")[0];
    if (LANGUAGES.includes(base)) return base;
  }
  return DEFAULT_LANGUAGE;
}

/** Remember `language` on this browser (a person's choice outlasts the console's). */
export function storeLanguage(language) {
  if (LANGUAGES.includes(language)) window.localStorage.setItem(STORED, language);
}

async function fetchCatalogue(language) {
  const response = await fetch(`/static/i18n/${language}.json`, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`no catalogue for ${language} (HTTP ${response.status})`);
  return response.json();
}

/** Load `language`'s catalogue (and English, the fallback of a key it lacks). */
export async function loadLanguage(language) {
  const chosen = LANGUAGES.includes(language) ? language : DEFAULT_LANGUAGE;
  state.english = await fetchCatalogue(DEFAULT_LANGUAGE);
  state.words = chosen === DEFAULT_LANGUAGE ? state.english : await fetchCatalogue(chosen);
  state.language = chosen;
  document.documentElement.lang = chosen;
  return chosen;
}

export const language = () => state.language;

/** Whether a catalogue has words for `key`. */
export const has = (key) => key in state.words || key in state.english;

/** The words of `key` with `{name}` filled from `values`; `fallback` (a table's English
 * message) when no catalogue has the key, else "" (never the key itself on a page). */
export function t(key, values, fallback) {
  const template = state.words[key] ?? state.english[key];
  if (template === undefined) {
    if (window.console) window.console.warn(`livetable: no words for ${key}`);
    return fallback === undefined || fallback === null ? "" : String(fallback);
  }
  return template.replace(/\{(\w+)\}/g, (whole, name) => (
    values && values[name] !== undefined && values[name] !== null ? String(values[name]) : whole));
}

/** A position as the rules name it ("player", "box3", "box2.hand1") in words. */
export function positionWords(position) {
  if (position === null || position === undefined) return "";
  const text = String(position);
  const split = /^box(\d+)\.hand(\d+)$/.exec(text);
  if (split) return t("position.hand", { box: split[1], hand: split[2] });
  const box = /^box(\d+)$/.exec(text);
  if (box) return t("position.box", { box: box[1] });
  return t(`position.${text}`, null, text);
}

/** A pause's need (the tile's `needs`: {code, position, count} or {code: null, words}). */
export function needWords(need) {
  if (!need || !need.code) return need && need.words ? String(need.words) : "";
  const values = { ...need };
  if (need.position) values.position = positionWords(need.position);
  return t(`need.${need.code}`, values, need.words);
}

/** The table's dealer line (`{action, position, count, message}`) in words, with what the
 * state says of it (a face-down card, a hold's reason, what a wait is for). */
export function dealerLineWords(line, state) {
  const awaiting = (state && state.awaiting) || {};
  const holds = (state && state.holds) || [];
  switch (line && line.action) {
    case "deal": {
      const where = positionWords(line.position || awaiting.position);
      const key = awaiting.what === "card" && awaiting.face_down ? "action.deal_face_down" : "action.deal_face_up";
      return t(key, { position: where });
    }
    case "burn": return t("action.burn", { count: line.count ?? awaiting.cards ?? "" });
    case "reveal": return t(state && state.phase === "BURN_REVEAL" ? "action.reveal" : "action.reveal_hole");
    case "shuffle": return t("action.shuffle");
    case "hold": return t(`dealer.hold.${holds.length ? holds[0].reason : ""}`, null, t("action.hold"));
    case "stop": {
      const pause = state && state.pause;
      return pause ? t(`dealer.stop.${pause.reason}`, null, t("dealer.stop.unknown")) : t("action.stop");
    }
    case "wait":
      return awaiting.what ? t(`awaiting.${awaiting.what}`, null, t("action.wait")) : t("action.wait");
    default:
      return line && line.message ? String(line.message) : t("action.wait");
  }
}

/** A pause's words for a person: a supervisor's pause is the reason they gave (their own
 * words); any other, its reason's words, or the table's English message for a reason this
 * catalogue does not know. */
export function pauseWords(pause) {
  if (!pause) return "";
  if (pause.reason === "supervisor") return pause.message || t("reason.supervisor");
  return t(`reason.${pause.reason}`, null, pause.message);
}

/** What a pause needs, in words: the tile's codes (`needs`), else the table's own words. */
export function needsWords(tile) {
  if (Array.isArray(tile.needs)) return tile.needs.map(needWords).filter(Boolean);
  const pause = tile.state && tile.state.pause;
  return pause && Array.isArray(pause.needs) ? pause.needs.map(String) : [];
}

/** A command's name in words (`open_round` -> "Open round"): its catalogue key, else its
 * name's plain words (a command of a newer table). */
export const commandWords = (name) => t(`command.${name}`, null, String(name).replace(/_/g, " "));

/** What a command does, in words: its catalogue key, else the API's English `help`. */
export function commandHelp(name, help) {
  const fallback = help ? help[0].toUpperCase() + help.slice(1) : "";
  return t(`command_help.${name}`, null, fallback);
}

/** A game's name in words, keyed by its id (`game.<id>`), with its variant's
 * (`variant.no-commission`); a game a catalogue lacks (a newer table's) by its id. */
export function gameWords(game, variant) {
  const name = t(`game.${game}`, null, game);
  return variant ? t("game.with_variant", { game: name, variant: t(`variant.${variant}`, null, variant) }) : name;
}

/** A value of the table's words in words: a phase, a hold, a resolution, a command by
 * their codes' words; a number, a person's name or words as they are. */
function valueWords(name, value) {
  const text = String(value);
  switch (name) {
    case "phase": return t(`phase.${text}`, null, text);
    case "hold": return t(`hold_name.${text}`, null, text);
    case "holds": return text.split(", ").map((hold) => t(`hold_name.${hold}`, null, hold)).join(", ");
    case "resolution": return t(`resolution.${text}`, null, text.replace(/_/g, " "));
    case "command": return commandWords(text);
    default: return text;
  }
}

/** Words the table publishes in English beside their code (a shoe_ended's `why` and
 * `why_code`, an audit entry's `message` and `message_code`): the code's words under
 * `prefix`, with its values in words; the table's English for a code this catalogue does
 * not know, or none (a table of an older livetable). */
export function codedWords(prefix, code, values, english) {
  if (!code) return english === undefined || english === null ? "" : String(english);
  const shown = {};
  for (const [name, value] of Object.entries(values || {})) if (value !== undefined && value !== null) shown[name] = valueWords(name, value);
  return t(`${prefix}.${code}`, shown, english);
}

/** A blackjack decision's token ("S") in words ("stand"); a token of a newer table as it is. */
export const choiceWords = (token) => t(`choice.${token}`, null, String(token));

/** A refusal's words: the code's, else the message as the table or the console said it. */
export function refusalWords(code, message) {
  const known = code && has(`refusal.${code}`) ? t(`refusal.${code}`) : "";
  if (known) return known;
  if (code && /^http_\d+$/.test(code)) return t("refusal.http");
  return message || t("refusal.error");
}

/** An age in seconds, in words ("42 s", "3 min 5 s", "1 h 2 min"). */
export function ageWords(value) {
  const whole = Math.max(0, Math.floor(value));
  if (whole < 60) return t("time.seconds", { n: whole });
  if (whole < 3600) return t("time.minutes", { m: Math.floor(whole / 60), s: whole % 60 });
  return t("time.hours", { h: Math.floor(whole / 3600), m: Math.floor((whole % 3600) / 60) });
}

/** Fill every element marked data-i18n="key" (its text) or data-i18n-title,
 * data-i18n-label, data-i18n-placeholder (those attributes) under `root`. */
export function translatePage(root = document) {
  for (const element of root.querySelectorAll("[data-i18n]")) element.textContent = t(element.dataset.i18n);
  const attributes = [["i18nTitle", "title"], ["i18nLabel", "aria-label"], ["i18nPlaceholder", "placeholder"]];
  for (const [data, attribute] of attributes) {
    const marker = `[data-${data.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}]`;
    for (const element of root.querySelectorAll(marker)) element.setAttribute(attribute, t(element.dataset[data]));
  }
}

/** A <select> of the languages, each named in itself; choosing one stores it and reloads. */
export function languagePicker(select) {
  select.replaceChildren(...LANGUAGES.map((code) => {
    const option = document.createElement("option");
    option.value = code;
    option.textContent = t(`language.${code}`);
    option.selected = code === state.language;
    return option;
  }));
  select.addEventListener("change", () => {
    storeLanguage(select.value);
    window.location.reload();
  });
}
