// The announcements: the live region a screen reader reads, and the opt-in beep.

import { ANNOUNCED_KEPT, app, byTestId, clock, h, serverNow } from "./common.js";

// --- sound -----------------------------------------------------------------------------------

export function audioContext() {
  if (!app.audio) {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return null;
    app.audio = new Context();
  }
  if (app.audio.state === "suspended") app.audio.resume();
  return app.audio;
}

export function playBeep() {
  const context = audioContext();
  if (!context) return;
  const start = context.currentTime;
  for (const offset of [0, 0.3]) {
    const oscillator = context.createOscillator();
    const gain = context.createGain();
    oscillator.type = "sine";
    oscillator.frequency.value = 880;
    gain.gain.setValueAtTime(0.0001, start + offset);
    gain.gain.exponentialRampToValueAtTime(0.3, start + offset + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, start + offset + 0.22);
    oscillator.connect(gain).connect(context.destination);
    oscillator.start(start + offset);
    oscillator.stop(start + offset + 0.25);
  }
}

/** Say `text` in the page's live region (a screen reader reads it out). */
export function announce(text) {
  const region = byTestId("announcer");
  if (!region) return;
  region.append(h("p", null, `${clock(serverNow())} ${text}`));
  while (region.childElementCount > ANNOUNCED_KEPT) region.firstElementChild.remove();
}

/** A new pause: beep if the supervisor opted in (counted for the tests in body[data-beeps]). */
export function beep() {
  if (!app.sound) return;
  app.beeps += 1;
  document.body.dataset.beeps = String(app.beeps);
  playBeep();
}
