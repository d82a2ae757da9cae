// The console's HTTP API (/api/...): the session, requests, the table's answers shown where the supervisor acted, and why a control is disabled.

import { ANSWER_CAUSE_MS, ANSWER_SHOWN_MS, SIGNED_OUT_URL, app, byTestId, clock, h, seconds } from "./common.js";
import { commandHelp, commandWords, refusalWords, t } from "./i18n.js";
import { render } from "./stream.js";

// --- the HTTP API --------------------------------------------------------------------------

export async function getJson(path) {
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
export async function sendCommand(table, command, args) {
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
export async function act(table, slot, command, args, onDone) {
  const key = `${table}|${slot}`;
  app.pending.add(key);
  app.answers.set(key, { ok: null, text: t("answer.waiting", { command: commandWords(command) }), at: Date.now() });
  render();
  const answer = await sendCommand(table, command, args);
  app.pending.delete(key);
  // Done, in the catalogue's words (the table's message is its English); a refusal in the
  // catalogue's words for its code (the table's own English where the catalogue has none).
  const said = answer.ok ? t("answer.done", { table, command: commandWords(command) })
    : t("answer.refused", { table, command: commandWords(command), why: refusalWords(answer.code, answer.message) });
  // A resume taken while the table stays paused (a supervisor's pause holds it, an outage
  // needs more) says so once the state shows it (answerLine).
  const still = answer.ok && command === "resume" ? t("answer.still_paused", { table, command: commandWords(command) }) : null;
  const time = clock(Date.now() / 1000);
  app.answers.set(key, { ok: answer.ok, text: `${time} ${said}`, still: still && `${time} ${still}`, at: Date.now() });
  if (onDone) onDone(answer);
  render();
  return answer;
}

/** A new pause on `table`: the answers shown for it are of a moment past (one still
 * awaited, or one that came just now, stays). */
export function forgetAnswers(table) {
  for (const slot of ["actions", "queue"]) {
    const key = `${table}|${slot}`;
    const answer = app.answers.get(key);
    if (answer && answer.ok !== null && Date.now() - answer.at > ANSWER_CAUSE_MS) app.answers.delete(key);
  }
}

/** The table's answer shown in `slot`, if any (one shown long enough is forgotten). */
export function currentAnswer(table, slot) {
  const key = `${table}|${slot}`;
  const answer = app.answers.get(key);
  if (answer && answer.ok !== null && Date.now() - answer.at > ANSWER_SHOWN_MS) {
    app.answers.delete(key);
    return undefined;
  }
  return answer;
}

export function answerLine(table, slot) {
  const answer = currentAnswer(table, slot);
  const cls = answer ? (answer.undone ? "undone" : answer.ok === null ? "waiting" : answer.ok ? "ok" : "refused") : "";
  return h("p", {
    class: `answer ${cls}`, testid: "answer", "data-ok": answer ? String(answer.ok) : null,
    "aria-live": "polite",
  }, answer ? answerText(table, answer) : "");
}

function answerText(table, answer) {
  const tile = app.tiles.get(table);
  const paused = tile && tile.state && tile.state.phase === "PAUSED";
  return answer.still && paused ? answer.still : answer.text;
}

// --- why a control is disabled ---------------------------------------------------------------

export function whyNotReachable(tile) {
  if (!app.link.up || tile.status === "unknown") return t("why.link_down");
  if (!app.streamUp) return t("why.no_stream");
  if (tile.status === "offline" || tile.availability === "offline") {
    return t("why.offline");
  }
  if (!tile.state) return t("why.no_state");
  return null;
}

/** Why `command` cannot be sent to this table now, or null if it can. */
export function whyNot(tile, command) {
  const offered = app.commands[command];
  if (!offered) return t("why.not_offered", { command: commandWords(command) });
  if (!offered.roles.includes(app.session.role)) {
    return t("why.role", { role: t(`role.${app.session.role}`, null, app.session.role), command: commandWords(command) });
  }
  const unreachable = whyNotReachable(tile);
  if (unreachable) return unreachable;
  const state = tile.state;
  const phase = state.phase;
  for (const slot of ["actions", "queue"]) {
    if (app.pending.has(`${tile.table}|${slot}`)) return t("why.waiting");
  }
  switch (command) {
    case "pause":
      // Pauses nest: a supervisor's pause asked while the table is paused is taken, and
      // holds until a supervisor lifts it (a table whose journal is older refuses it).
      return null;
    case "open_round":
      // As the table takes it (docs/mqtt-api.md): in SHOE_READY, with the shoe online.
      if (phase === "PAUSED") return t("why.paused");
      if (state.round) return t("why.round_in_play");
      if (phase === "AWAITING_SHUFFLE") return t("why.no_shoe");
      if (phase !== "SHOE_READY") return t("why.between_rounds", { phase: t(`phase.${phase}`, null, phase) });
      if (state.devices && state.devices.shoe_online === false) return t("why.shoe_offline");
      return null;
    case "cancel":
      return state.round ? null : t("why.no_round");
    case "end_shoe":
      if (!state.shoe || state.shoe.id === null || phase === "AWAITING_SHUFFLE") {
        return t("why.no_shoe_in_play");
      }
      if (state.round) return t("why.cancel_first");
      if (!["SHOE_READY", "BURN_REVEAL", "BURNING"].includes(phase)) {
        return t("why.cannot_end_shoe", { phase: t(`phase.${phase}`, null, phase) });
      }
      return null;
    case "new_shoe":
      if (state.round) return t("why.cancel_first");
      if (!["AWAITING_SHUFFLE", "SHOE_READY"].includes(phase)) {
        return t("why.new_shoe_when", { phase: t(`phase.${phase}`, null, phase) });
      }
      return null;
    default:
      return phase === "PAUSED" ? null : t("why.not_paused");
  }
}

/** Why the pause's `resolution` would be refused now, or null if it can be sent: the
 * table refuses every resume while its shoe is offline, and an accept unless the pause
 * returns to a deal (a card expected where the held one would go). */
export function whyNotResolve(tile, resolution) {
  const why = whyNot(tile, "resume");
  if (why) return why;
  if (app.undo.has(tile.table)) return t("why.undo_first");
  const state = tile.state;
  if (state.devices && state.devices.shoe_online === false) return t("why.shoe_offline_resume");
  const pause = state.pause || {};
  if (resolution === "accept" && pause.resume_to !== undefined && pause.resume_to !== "DEALING") {
    return t("why.no_card_expected");
  }
  return null;
}

export function actionButton(tile, command, label, testid, onClick) {
  const why = whyNot(tile, command);
  // Enabled, it says what it does: the catalogue's words for the command, else the API's
  // own (/api/commands).
  const help = why === null ? commandHelp(command, app.commands[command].help) : "";
  return h("button", {
    type: "button", testid, disabled: why !== null,
    title: why || help || label,
    onclick: why === null ? onClick : null,
  }, label);
}

/** The session as /api/session has it: a person's, or (theirs ended) the wall's. */
export function showSession(session) {
  app.session = session;
  if (session.link) app.link = session.link;
  byTestId("session-account").textContent = session.wall ? t("console.signed_out") : session.account;
  byTestId("session-role").textContent = session.wall ? t("console.watching") : t(`role.${session.role}`, null, session.role);
  document.body.dataset.role = session.role;
  document.body.dataset.wall = String(Boolean(session.wall));
  byTestId("banner-wall").hidden = !session.wall;
  byTestId("banner-wall-idle").textContent = seconds(session.idle_timeout_s || 0).replace(/ 0 s$/, "");
  byTestId("signout").hidden = Boolean(session.wall);
  render();
}
