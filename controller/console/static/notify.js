// Browser notifications of a new pause (the Notification API), for a supervisor whose console
// is behind another window. Offered by a button: the permission is asked on that click (a
// browser asks only on a person's gesture), and the choice is kept on this browser.

import { t } from "./i18n.js";

const STORED = "livetable.notify";

const supported = () => "Notification" in window;
const wanted = () => window.localStorage.getItem(STORED) === "on";
export const notifying = () => supported() && wanted() && Notification.permission === "granted";

/** The header's button: offer, turn on (asking the browser), turn off. */
export function setUpNotifications(button) {
  if (!supported()) {
    button.hidden = true;
    return;
  }
  const show = () => {
    const on = notifying();
    button.textContent = on ? t("console.notify_on") : t("console.notify_offer");
    button.setAttribute("aria-pressed", String(on));
    button.title = Notification.permission === "denied" ? t("console.notify_denied") : t("console.notify_hint");
  };
  button.addEventListener("click", async () => {
    if (notifying()) {
      window.localStorage.setItem(STORED, "off");
    } else {
      const permission = await Notification.requestPermission();
      window.localStorage.setItem(STORED, permission === "granted" ? "on" : "off");
    }
    show();
  });
  show();
}

/** A new pause of `table`, said in a notification (one per table: a newer replaces it). */
export function notifyPause(table, pause) {
  if (!notifying()) return;
  const words = t(`reason.${pause.reason}`, null, pause.message || "");
  // eslint-disable-next-line no-new
  new Notification(t("console.notify_title", { table }), { body: words, tag: `livetable-pause-${table}` });
}
