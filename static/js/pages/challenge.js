// One challenge: its definition and the form that submits signal code for a
// walk-forward evaluation. The result opens on the evaluation page.
import { api, post, qs, rows, available } from '../api.js';
import { h, clear, field, dl, table, link } from '../dom.js';
import { editor } from '../editor.js';
import { signalTemplate } from '../templates.js';
import { navigate, announce } from '../app.js';
import { statusBadge, ago, num } from '../format.js';
import { pageHead, pick, unavailable, challengeMap, shortId, evalScore, datasetList } from './common.js';
import { datasetFit, datasetDays } from '../results.js';
import { horizonText, embeddingText, metricText } from './challenges.js';

export async function render(ctx) {
  const root = clear(ctx.main);
  const name = ctx.params.name;
  root.append(pageHead(ctx, name));
  if (!await available('/api/challenges')) {
    root.append(unavailable('Challenges'));
    return;
  }
  const [all, ds] = await Promise.all([
    api('/api/challenges'),
    api('/datasets').catch((e) => { if (e.status === 401) throw e; return []; }),
  ]);
  if (ctx.signal.aborted) return;
  const ch = challengeMap(all)[name];
  if (!ch) {
    root.append(h('p', { class: 'error' }, `There is no challenge called ${name}. `), link('#/challenges', 'All challenges'));
    return;
  }
  root.append(h('section', { class: 'panel', 'aria-label': 'Challenge definition' },
    ch.desc ? h('p', null, ch.desc) : null,
    dl([
      ['Type', ch.type ? String(ch.type) : null],
      ['Asset', ch.asset ? String(ch.asset) : null],
      ['Assets', Array.isArray(ch.assets) && ch.assets.length > 1 ? ch.assets.join(', ') : null],
      ['Horizon', horizonText(ch)],
      ['Embedding', embeddingText(ch)],
      ['Metric', metricText(ch)],
    ]),
    h('p', { class: 'actions' }, link(`#/leaderboards/challenge/${encodeURIComponent(name)}`, 'Leaderboard'))));

  // Only datasets the challenge can run on are offered (1-minute bars of
  // its assets); the others are named with the reason.
  const { list: dsList, defaultVersion } = datasetList(ds);
  const fit = dsList.filter((d) => !datasetFit(d, ch));
  const unfit = dsList.filter((d) => datasetFit(d, ch));
  const dsSel = h('select', { name: 'dataset_version' });
  for (const d of fit) {
    const v = String(pick(d, 'version', 'dataset_version'));
    dsSel.append(h('option', { value: v, selected: v === defaultVersion },
      `${v} (${num(datasetDays(d), 1)} days, ${Array.isArray(d.assets) ? d.assets.length : '?'} assets)${v === defaultVersion ? ', the default' : ''}`));
  }
  if (!fit.length) dsSel.append(h('option', { value: '' }, 'server default'));
  const dsHint = unfit.length
    ? `Not offered: ${unfit.map((d) => `${pick(d, 'version', 'dataset_version')} (${datasetFit(d, ch)})`).join('; ')}.`
    : null;
  const daysBack = h('input', { type: 'number', name: 'days_back', min: 1, max: 3650, step: 1, inputmode: 'numeric', placeholder: '60' });
  const holdout = h('input', { type: 'number', name: 'holdout_days', min: 1, max: 60, step: 1, inputmode: 'numeric', placeholder: '20' });
  const mode = h('select', { name: 'mode' },
    h('option', { value: 'strict' }, 'strict (fixes the original’s bugs)'),
    h('option', { value: 'mantis' }, 'mantis (bit-for-bit like the original)'));
  const evName = h('input', { type: 'text', name: 'name', maxlength: 128, autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. momentum 60m, tanh ×300' });
  const evNote = h('textarea', { name: 'note', rows: 2, maxlength: 1024, spellcheck: 'true' });
  const ed = editor({ label: 'Signal code (Python: TechFeaturizer and TechPredictor)', value: signalTemplate({ name, ...ch }) });
  const err = h('p', { class: 'error', role: 'alert' });
  const btn = h('button', { type: 'submit', class: 'primary' }, 'Evaluate');
  const form = h('form', { class: 'stack panel', 'aria-labelledby': 'sig-title', novalidate: true },
    h('h2', { id: 'sig-title' }, 'Submit a signal'),
    ed.el,
    h('div', { class: 'fields' },
      field('Name (optional)', evName, 'Shown on the leaderboard and in lists, to tell your submissions apart.'),
      field('Note (optional)', evNote, 'What you tried; shown on the evaluation page.'),
      field('Dataset version', dsSel, dsHint),
      field('Days of history', daysBack, 'Empty: the server default.'),
      field('Holdout days', holdout, 'The last days, scored but never shown to agents.'),
      field('Scoring mode', mode)),
    err,
    h('div', { class: 'actions' }, btn));
  root.append(form);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    ed.showError(null);
    if (!ed.value().trim()) { ed.showError({ message: 'The code is empty.' }); return; }
    const body = { challenge: name, code: ed.value(), mode: mode.value };
    if (dsSel.value) body.dataset_version = dsSel.value;
    const enc = new TextEncoder();
    for (const [k, el, max, what] of [['name', evName, 128, 'The name'], ['note', evNote, 1024, 'The note']]) {
      const v = el.value.trim();
      el.removeAttribute('aria-invalid');
      if (!v) continue;
      if (enc.encode(v).length > max) {
        err.textContent = `${what} is longer than ${max} bytes.`;
        el.setAttribute('aria-invalid', 'true');
        el.focus();
        return;
      }
      body[k] = v;
    }
    for (const [k, el] of [['days_back', daysBack], ['holdout_days', holdout]]) {
      if (el.value === '') continue;
      const n = Number(el.value);
      if (!Number.isInteger(n) || n <= 0) {
        err.textContent = `${k === 'days_back' ? 'Days of history' : 'Holdout days'} must be a whole number of days.`;
        el.setAttribute('aria-invalid', 'true');
        el.focus();
        return;
      }
      el.removeAttribute('aria-invalid');
      body[k] = n;
    }
    // more days than the dataset holds would silently evaluate fewer
    const chosen = fit.find((d) => String(pick(d, 'version', 'dataset_version')) === dsSel.value);
    if (chosen && body.days_back && body.days_back > datasetDays(chosen)) {
      err.textContent = `Days of history: ${dsSel.value} holds ${num(datasetDays(chosen), 1)} days; ask for at most ${Math.floor(datasetDays(chosen))}.`;
      daysBack.setAttribute('aria-invalid', 'true');
      daysBack.focus();
      return;
    }
    btn.disabled = true;
    btn.textContent = 'Submitting…';
    try {
      const res = await post('/api/evaluations', body);
      announce('Evaluation queued');
      navigate(`#/evaluations/${encodeURIComponent(pick(res, 'evaluation_id', 'id'))}`);
    } catch (e) {
      if (e.status === 401) return;
      if (e.status === 404 && e.path === '/api/evaluations') err.textContent = 'Evaluations are not available on this server yet.';
      else if (e.status === 400 && /^field '(name|note)'/.test(e.message || '')) err.textContent = `${e.message} (${e.code})`;
      else if (e.status === 400 || e.status === 422) ed.showError(e);
      else err.textContent = `${e.message}${e.code ? ` (${e.code})` : ''}`;
    } finally {
      btn.disabled = false;
      btn.textContent = 'Evaluate';
    }
  });

  // Recent evaluations of this challenge, when the server lists them.
  try {
    const ev = await api(`/api/evaluations${qs({ challenge: name, limit: 10 })}`);
    if (ctx.signal.aborted) return;
    const list = rows(ev, 'evaluations');
    root.append(h('h2', null, 'Recent evaluations'), table([
      { label: 'Evaluation', cell: (e) => link(`#/evaluations/${encodeURIComponent(pick(e, 'evaluation_id', 'id'))}`, shortId(pick(e, 'evaluation_id', 'id'))) },
      { label: 'Status', cell: (e) => statusBadge(e.status) },
      { label: 'Mode', cell: (e) => String(pick(e, 'mode') ?? '—') },
      { label: 'Score', num: true, cell: (e) => evalScore(e) },
      { label: 'Owner', cell: (e) => String(pick(e, 'owner', 'user') ?? '—') },
      { label: 'Queued', cell: (e) => ago(pick(e, 'queued_at', 'created_at')) },
    ], list, { caption: `Recent evaluations of ${name}`, empty: 'None yet.' }));
  } catch (e) {
    if (e.status === 401) throw e;
    if (e.status === 404 && !await available('/api/evaluations')) root.append(unavailable('Evaluations'));
  }
}
