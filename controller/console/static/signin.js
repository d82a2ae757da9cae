// The sign-in page in the studio's language: its labels and its message (served in English,
// with the message's code and value) from the catalogues. A kiosk that lost its session (the
// console restarted) comes back here, and says it in its dealer's language.

import { chooseLanguage, loadLanguage, t, translatePage } from "./i18n.js";

async function start() {
  try {
    await loadLanguage(chooseLanguage(document.body.dataset.language || null));
  } catch (error) {
    return; // the English as served stays
  }
  translatePage();
  const message = document.querySelector('[data-testid="signin-message"]');
  const code = message.dataset.code;
  if (code) {
    const values = { value: message.dataset.value, name: message.dataset.name };
    message.textContent = t(`signin.${code}`, values, message.textContent);
  }
  document.body.dataset.translated = "true";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
