// The livetable supervisor console's page: the wall of tables, the pause queue and the
// supervisor's actions, on the console's HTTP API (/api/...) and its event stream. This
// module starts the page and holds its keys; the others (ES modules, no build step) hold
// one idea each.
//
// Every string that comes from a table (ids, messages, reasons, account names, cards) is put
// into the page as text (textContent, text nodes, attribute values): never as HTML.

import { getJson, showSession, whyNotResolve } from "./api.js";
import { audioContext, playBeep } from "./audio.js";
import { app, byTestId, h, isSupervisor, parseCard } from "./common.js";
import { setUpHistory, startHistoryPage } from "./history.js";
import { chooseLanguage, languagePicker, loadLanguage, translatePage } from "./i18n.js";
import { setUpNotifications } from "./notify.js";
import { setUpPicker } from "./picker.js";
import { choicesFor, isPaused, queueTiles, resolve, select, undo } from "./queue.js";
import { connectStream, reloadTables, render, tick } from "./stream.js";
import { health, wallOrder } from "./wall.js";

// --- keyboard --------------------------------------------------------------------------------

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  const help = byTestId("help-overlay");
  if (event.key === "?") {
    event.preventDefault();
    if (help.open) help.close();
    else if (!document.querySelector("dialog[open]")) help.showModal();
    return;
  }
  if (document.querySelector("dialog[open]")) return;
  if (event.key === "Escape" && undo(null)) {
    event.preventDefault();
    return;
  }
  const paused = queueTiles();
  const index = paused.findIndex((tile) => tile.table === app.selected);
  if (event.key === "j" || event.key === "ArrowDown") {
    if (paused.length) select(paused[Math.min(paused.length - 1, index + 1)].table);
    event.preventDefault();
    render();
    return;
  }
  if (event.key === "k" || event.key === "ArrowUp") {
    if (paused.length) select(paused[Math.max(0, index - 1)].table);
    event.preventDefault();
    render();
    return;
  }
  if (!isSupervisor() || index < 0 || !isPaused(paused[index])) return;
  const tile = paused[index];
  const choice = choicesFor(tile.state.pause).find((known) => known[2] === event.key);
  if (choice && whyNotResolve(tile, choice[0]) === null) {
    event.preventDefault();
    resolve(tile.table, choice[0]);
  }
}

// --- start -----------------------------------------------------------------------------------

function setUpHeader() {
  showSession(app.session);
  const toggle = byTestId("sound-toggle");
  app.sound = window.localStorage.getItem("livetable.sound") === "on";
  toggle.checked = app.sound;
  toggle.addEventListener("change", () => {
    app.sound = toggle.checked;
    window.localStorage.setItem("livetable.sound", app.sound ? "on" : "off");
    if (app.sound) audioContext(); // a user gesture: the browser lets the page make sound
  });
  byTestId("sound-test").addEventListener("click", playBeep);
  byTestId("help-open").addEventListener("click", () => byTestId("help-overlay").showModal());
  byTestId("signout").addEventListener("click", async () => {
    try {
      await fetch("/signout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": app.session.csrf } });
    } finally {
      window.location.assign("/signin");
    }
  });
}

async function startWall() {
  try {
    app.session = await getJson("/api/session");
    app.games = await getJson("/api/games");
    app.commands = await getJson("/api/commands");
    await loadLanguage(chooseLanguage(app.session.language));
  } catch (error) {
    document.body.dataset.error = String(error.message);
    return;
  }
  translatePage();
  languagePicker(byTestId("language"));
  setUpNotifications(byTestId("notify-toggle"));
  setUpHeader();
  setUpPicker();
  setUpHistory();
  byTestId("audit-close").addEventListener("click", () => byTestId("audit-dialog").close());
  document.addEventListener("keydown", onKey);
  const wall = byTestId("wall");
  wall.addEventListener("pointerenter", () => { app.pointerOnWall = true; });
  wall.addEventListener("pointerleave", () => { app.pointerOnWall = false; render(); });
  // The focus leaving a tile lets the order come (a redraw, once the focus moved on).
  wall.addEventListener("focusout", () => render());
  await reloadTables().catch(() => {});
  connectStream();
  setInterval(tick, 200);
  // Resolved pauses and answers leave the page when their time is up.
  setInterval(() => { if (app.resolved.size || app.answers.size) render(); }, 1000);
}

function start() {
  const page = document.body.dataset.page;
  if (page === "history" || window.location.pathname === "/history") {
    if (page !== "history") {
      // Served the app page at /history: show the printable round instead of the wall.
      document.body.dataset.page = "history";
      document.body.replaceChildren(h("main", { class: "history-page", testid: "history-page" },
        h("nav", { class: "noprint" }, h("a", { href: "/", testid: "history-back", "data-i18n": "history.back" }),
          " ", h("button", { type: "button", testid: "history-print", "data-i18n": "history.print" })),
        h("div", { class: "history-content", testid: "history-content" })));
    }
    startHistoryPage();
  } else {
    startWall();
  }
}

// For the tests and the curious: the card parser, the wall's order and the devices'
// health, read-only.
window.livetableConsole = Object.freeze({ parseCard, wallOrder, health });

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
