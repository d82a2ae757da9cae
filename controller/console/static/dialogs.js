// The confirmations: pause, cancel, end shoe, new shoe.

import { act } from "./api.js";
import { app, byTestId, h } from "./common.js";

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
        error.textContent = "A reason is needed.";
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
    title: `Pause table ${table}`,
    lines: ["The table stops taking cards and decisions until a supervisor resumes it."],
    okLabel: "Pause the table",
    reasonCaption: "Reason (required, the journal keeps it)",
    reasonRequired: true,
    reasonPlaceholder: "e.g. spilled drink",
  });
  if (chosen) act(table, "actions", "pause", { reason: chosen.reason });
}

export async function askCancel(table) {
  const tile = app.tiles.get(table);
  const round = tile && tile.state && tile.state.round;
  if (!round) return;
  const chosen = await confirmDialog({
    title: `Cancel round ${round.id} on table ${table}?`,
    lines: [
      `Round ${round.id} is void.`,
      "Every bet in it is refunded.",
      "The cards dealt in it are discarded.",
      "This cannot be undone.",
    ],
    okLabel: `Void round ${round.id}`,
    reasonCaption: "Reason (optional)",
    reasonRequired: false,
  });
  // round_id: the table refuses if another round is in play by the time it gets this.
  if (chosen) act(table, "actions", "cancel", { round_id: round.id, reason: chosen.reason });
}

export async function askEndShoe(table, shoeId) {
  const chosen = await confirmDialog({
    title: `End shoe ${shoeId} on table ${table}?`,
    lines: [
      `Shoe ${shoeId} is finished: no more rounds are dealt from it.`,
      "The table then waits for a shuffle and a new shoe.",
    ],
    okLabel: `End shoe ${shoeId}`,
    reasonCaption: "Reason (optional)",
    reasonRequired: false,
  });
  if (chosen) act(table, "actions", "end_shoe", { reason: chosen.reason });
}

export async function askNewShoe(table, shoeId) {
  const lines = shoeId !== null && shoeId !== undefined
    ? [`Shoe ${shoeId} ends now.`, "Declare a new shoe only once it is shuffled and in the shoe."]
    : ["Declare a new shoe only once it is shuffled and in the shoe."];
  lines.push("The dealer then reveals its first card and burns.");
  const chosen = await confirmDialog({
    title: `Declare a new shoe on table ${table}?`, lines, okLabel: "Declare the new shoe", reasonCaption: null,
  });
  if (chosen) act(table, "actions", "new_shoe", {});
}
