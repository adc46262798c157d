// Submit a strategy (or a new version of one): name, params, code. The API
// checks syntax and the contract in the sandbox before storing anything;
// its error lands at the line it names. On success we go to the version.
import { api, post } from '../api.js';
import { h, clear, field } from '../dom.js';
import { editor } from '../editor.js';
import { STRATEGY_TEMPLATES } from '../templates.js';
import { navigate, announce, confirmDialog } from '../app.js';
import { pageHead, parseParams, pick } from './common.js';

export async function render(ctx) {
  const root = clear(ctx.main);
  const baseName = ctx.query.get('name') || '';
  const fromVersion = ctx.query.get('from');
  root.append(pageHead(ctx, baseName ? `New version of ${baseName}` : 'New strategy'));

  let startCode = STRATEGY_TEMPLATES.simulate;
  let startParams = '';
  if (fromVersion) {
    try {
      const v = await api(`/strategies/versions/${encodeURIComponent(fromVersion)}`);
      if (v && typeof v.code === 'string') startCode = v.code;
      if (v && v.params && Object.keys(v.params).length) startParams = JSON.stringify(v.params, null, 2);
    } catch (e) {
      if (e.status === 401) throw e;
    }
    if (ctx.signal.aborted) return;
  }

  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 128, autocomplete: 'off', value: baseName });
  const kind = h('select', { name: 'template' },
    h('option', { value: 'simulate' }, 'simulate(prices, params) → equity'),
    h('option', { value: 'positions' }, 'positions(prices, params) → exposure per bar'));
  const params = h('textarea', { name: 'params', rows: 3, class: 'mono', spellcheck: 'false', placeholder: '{"window": 50}' });
  params.value = startParams;
  const ed = editor({ label: 'Code (Python)', value: startCode });
  const formErr = h('p', { class: 'error', role: 'alert' });
  const submitBtn = h('button', { type: 'submit', class: 'primary' }, 'Submit');
  let pristine = true;
  ed.onInput(() => { pristine = false; });
  let shownKind = kind.value;
  kind.addEventListener('change', async () => {
    if (!pristine && ed.value().trim() &&
        !await confirmDialog('Replace your code?', 'The editor will get the template instead of the code you wrote.', 'Replace')) {
      kind.value = shownKind;
      return;
    }
    shownKind = kind.value;
    ed.setValue(STRATEGY_TEMPLATES[kind.value]);
    pristine = true;
  });

  const form = h('form', { class: 'stack panel', novalidate: true, 'aria-label': 'Submit a strategy' },
    h('div', { class: 'fields' },
      field('Name', name, 'New code under an existing name becomes a new version of that strategy.'),
      fromVersion ? null : field('Start from a template', kind)),
    ed.el,
    field('Params (JSON object, optional)', params, 'Default parameters stored with this version and used by its runs unless a run overrides them.'),
    formErr,
    h('div', { class: 'actions' }, submitBtn, h('a', { href: '#/strategies' }, 'Cancel')));
  root.append(form);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    formErr.textContent = '';
    ed.showError(null);
    name.removeAttribute('aria-invalid');
    if (!name.value.trim()) {
      name.setAttribute('aria-invalid', 'true');
      formErr.textContent = 'Give the strategy a name.';
      name.focus();
      return;
    }
    if (!ed.value().trim()) {
      ed.showError({ message: 'The code is empty.' });
      ed.focus();
      return;
    }
    let p;
    try {
      p = parseParams(params.value);
    } catch (e) {
      formErr.textContent = e.message;
      params.setAttribute('aria-invalid', 'true');
      params.focus();
      return;
    }
    params.removeAttribute('aria-invalid');
    submitBtn.disabled = true;
    submitBtn.textContent = 'Checking…';
    try {
      const res = await post('/strategies/submit', { code: ed.value(), name: name.value.trim(), params: p });
      const vid = pick(res, 'strategy_version_id', 'version_id');
      announce(res.created === false ? 'This code already exists; opening its version.' : 'Strategy submitted.');
      navigate(`#/versions/${encodeURIComponent(vid)}?submitted=${res.created === false ? 'existing' : 'new'}`);
    } catch (e) {
      if (e.status === 401) return;
      if (e.status === 400 || e.status === 422) {
        ed.showError(e);
        if (!e.line) formErr.textContent = '';
      } else {
        formErr.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
      }
    } finally {
      submitBtn.disabled = false;
      submitBtn.textContent = 'Submit';
    }
  });
}
