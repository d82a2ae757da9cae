// A pause ages on the wall: amber after [console] pause_amber_s, red after pause_red_s (by
// default one and two minutes: red when the shipped Prometheus alert fires). Every element
// that shows a pause carries its start (data-pause-since); its data-age is written here, on
// every tick, from the server's clock.

import { app } from "./common.js";

export const DEFAULT_AMBER_S = 60;
export const DEFAULT_RED_S = 120;

/** "fresh", "amber" or "red" for a pause that began at `since` (server seconds). */
export function pauseAge(since, now) {
  const session = app.session || {};
  const amber = Number(session.pause_amber_s) || DEFAULT_AMBER_S;
  const red = Number(session.pause_red_s) || DEFAULT_RED_S;
  const age = now - since;
  if (age >= red) return "red";
  if (age >= amber) return "amber";
  return "fresh";
}

/** Write each pause's age (data-age) where the page shows one. */
export function markAges(now) {
  for (const element of document.querySelectorAll("[data-pause-since]")) {
    const since = element.dataset.pauseSince;
    const age = since === "" ? "" : pauseAge(Number(since), now);
    if (element.dataset.age !== age) element.dataset.age = age;
  }
}
