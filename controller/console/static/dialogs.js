// The confirmations: pause, cancel, end shoe, new shoe.

import { act } from "./api.js";
import { app, byTestId, h } from "./common.js";
import { t } from "./i18n.js";

// --- dialogs ---------------------------------------------------------------------------------

/** A confirmation: resolves to {reason} on OK, null on Back or Escape. */
export function confirmDialog({ title, lines, okLabel, reasonCaption, reasonRequired, reasonPlaceholder }) {
  const dialog = byTestId("confirm-dialog");
  const reason = byTestId("confirm-reason");
  const error = byTestId("confirm-error");
  byTestId("confirm-title").textContent = title;
  byTestId("confirm-text").replaceChildren(...lines.map((line) => h("p", null, line)));
  byTestId("confirm-ok").textContent = okLabel;
  byTestId("confirm-reason-label").hidden = reasonCaption === null;
  byTestId("confirm-reason-caption").textContent = reasonCaption || "";
  reason.value = "";
  reason.required = false; // checked below, with a message of our own
  reason.placeholder = reasonPlaceholder || "";
  error.hidden = true;
  return new Promise((done) => {
    const finish = (value) => {
      cleanup();
      if (dialog.open) dialog.close();
      done(value);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      if (reasonRequired && !reason.value.trim()) {
        error.textContent = t("dialog.reason_needed");
        error.hidden = false;
        reason.focus();
        return;
      }
      finish({ reason: reason.value.trim() });
    };
    const onBack = () => finish(null);
    const onCancel = (event) => { event.preventDefault(); finish(null); };
    const form = dialog.querySelector("form");
    const back = byTestId("confirm-back");
    function cleanup() {
      form.removeEventListener("submit", onSubmit);
      back.removeEventListener("click", onBack);
      dialog.removeEventListener("cancel", onCancel);
    }
    form.addEventListener("submit", onSubmit);
    back.addEventListener("click", onBack);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    (reasonCaption !== null ? reason : byTestId("confirm-back")).focus();
  });
}

export async function askPause(table) {
  const chosen = await confirmDialog({
    title: t("dialog.pause_title", { table }),
    lines: [t("dialog.pause_text")],
    okLabel: t("dialog.pause_ok"),
    reasonCaption: t("dialog.reason_required"),
    reasonRequired: true,
    reasonPlaceholder: t("dialog.pause_placeholder"),
  });
  if (chosen) act(table, "actions", "pause", { reason: chosen.reason });
}

export async function askCancel(table) {
  const tile = app.tiles.get(table);
  const round = tile && tile.state && tile.state.round;
  if (!round) return;
  const chosen = await confirmDialog({
    title: t("dialog.cancel_title", { round: round.id, table }),
    lines: [
      t("dialog.cancel_void", { round: round.id }),
      t("dialog.cancel_refunded"),
      t("dialog.cancel_discarded"),
      t("dialog.cannot_undo"),
    ],
    okLabel: t("dialog.cancel_ok", { round: round.id }),
    reasonCaption: t("dialog.reason_optional"),
    reasonRequired: false,
  });
  // round_id: the table refuses if another round is in play by the time it gets this.
  if (chosen) act(table, "actions", "cancel", { round_id: round.id, reason: chosen.reason });
}

export async function askEndShoe(table, shoeId) {
  const chosen = await confirmDialog({
    title: t("dialog.end_shoe_title", { shoe: shoeId, table }),
    lines: [
      t("dialog.end_shoe_finished", { shoe: shoeId }),
      t("dialog.end_shoe_then"),
    ],
    okLabel: t("dialog.end_shoe_ok", { shoe: shoeId }),
    reasonCaption: t("dialog.reason_optional"),
    reasonRequired: false,
  });
  if (chosen) act(table, "actions", "end_shoe", { reason: chosen.reason });
}

export async function askNewShoe(table, shoeId) {
  const lines = shoeId !== null && shoeId !== undefined
    ? [t("dialog.new_shoe_ends", { shoe: shoeId }), t("dialog.new_shoe_when")]
    : [t("dialog.new_shoe_when")];
  lines.push(t("dialog.new_shoe_then"));
  const chosen = await confirmDialog({
    title: t("dialog.new_shoe_title", { table }), lines, okLabel: t("dialog.new_shoe_ok"), reasonCaption: null,
  });
  if (chosen) act(table, "actions", "new_shoe", {});
}
