// What the signed-in token may do: its scope (GET /v1/token), and the actions the console offers
// for it. An action is drawn only for a token whose scope allows it, so that a read-only token
// sees everything there is to read and no button the server would refuse with 403.
// Tested by Server/Tests/ConsoleAssetsTests/access.test.mjs.

import { el } from './dom.mjs';

/** The scopes, each allowing what the ones before it allow (the server's TokenScope). */
export const SCOPES = ['read', 'write', 'admin'];

/**
 * Whether a token of `scope` may take an action that needs `needed`.
 * @param {string} scope The token's scope.
 * @param {string} needed The action's.
 * @returns {boolean} False for a scope that is not one of {@link SCOPES}.
 */
export function allows(scope, needed) {
  const have = SCOPES.indexOf(scope);
  const need = SCOPES.indexOf(needed);
  return have >= 0 && need >= 0 && have >= need;
}

/**
 * The token's scope, read once per token.
 * @param {object} options
 * @param {(path: string) => Promise<any>} options.api
 * @param {() => string | null} options.token The token requests carry now.
 * @returns {{scope: () => Promise<string>}} `scope()` answers GET /v1/token's `scope` for the token
 *   in use, asking again once the token changed or the last ask failed.
 */
export function createAccess({ api, token }) {
  let asked = null;
  let askedFor = null;
  return {
    scope() {
      const current = token();
      if (!asked || askedFor !== current) {
        askedFor = current;
        asked = api('/v1/token').then((answer) => answer.scope, (error) => { asked = null; throw error; });
      }
      return asked;
    },
  };
}

/**
 * The actions a scope allows, as buttons with the line that tells their outcome: each runs its
 * request when clicked and writes the result there.
 * @param {string} scope The token's scope.
 * @param {{name: string, label: string, needs: string, run: () => Promise<string | null>}[]} actions
 *   `run` makes the request and answers the sentence to show (`null`: the view is drawn again).
 * @returns {HTMLElement | null} A `div.actions` with one `button.action[data-action=NAME]` per
 *   action allowed; `null` when the scope allows none, so that nothing is drawn.
 */
export function actionBar(scope, actions) {
  const allowed = actions.filter((action) => allows(scope, action.needs));
  if (!allowed.length) return null;
  const status = el('p', { class: 'action-status', role: 'status' });
  const buttons = allowed.map((action) => {
    const button = el('button', { class: 'action quiet', type: 'button', 'data-action': action.name }, action.label);
    button.addEventListener('click', () => runAction(button, status, action.label, action.run));
    return button;
  });
  return el('div', { class: 'actions' }, buttons, status);
}

/**
 * Runs an action from the control that started it: the control disabled until it is done, the
 * outcome written in its status line (`LABEL…`, then the sentence `run` answers, or
 * `LABEL failed: ` and the API's reason, in `.error`).
 * @param {{disabled: boolean}} control The button (a form's submit button for a form).
 * @param {{className: string, textContent: string}} status The line that tells the outcome.
 * @param {string} label The action's name in words.
 * @param {() => Promise<string | null>} run Makes the request and answers the sentence to show
 *   (`null`: the view is drawn again, so nothing is written).
 * @returns {Promise<void>} Settled once the action is done; never rejects.
 */
export async function runAction(control, status, label, run) {
  control.disabled = true;
  status.className = 'action-status muted';
  status.textContent = label + '…';
  try {
    const sentence = await run();
    if (sentence !== null) status.textContent = sentence;
  } catch (error) {
    status.className = 'action-status error';
    status.textContent = label + ' failed: ' + error.message;
  } finally {
    control.disabled = false;
  }
}
