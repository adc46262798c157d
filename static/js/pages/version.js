// One strategy version: its code (shown to its owner and admins), its runs
// grouped by dataset, and the form that queues a new run.
import { api, post, qs, rows } from '../api.js';
import { h, clear, field, link, dl } from '../dom.js';
import { ago, fullHash } from '../format.js';
import { navigate, announce } from '../app.js';
import { pageHead, pick, runsTable, parseParams, runId, datasetList } from './common.js';

/** runForm(versionId, defaults, datasets) -> form element that queues a run. */
function runForm(vid, version, datasets, defaultVersion) {
  const dsSel = h('select', { name: 'dataset_version' });
  if (!datasets.length) dsSel.append(h('option', { value: '' }, 'server default'));
  for (const d of datasets) {
    const v = String(pick(d, 'version', 'dataset_version'));
    dsSel.append(h('option', { value: v, selected: v === defaultVersion }, v === defaultVersion ? `${v} (default)` : v));
  }
  const params = h('textarea', { name: 'params', rows: 3, class: 'mono', spellcheck: 'false', placeholder: '{}' });
  if (version.params && Object.keys(version.params).length) params.value = JSON.stringify(version.params, null, 2);
  // The asset is a choice among the chosen dataset's assets (its first is
  // the server's default), refreshed when the dataset changes.
  const asset = h('select', { name: 'asset' });
  const fillAssets = () => {
    const d = datasets.find((x) => String(pick(x, 'version', 'dataset_version')) === dsSel.value);
    const list = d && Array.isArray(d.assets) ? d.assets.map(String) : [];
    const keep = asset.value;
    asset.replaceChildren(...(list.length
      ? list.map((a, i) => h('option', { value: i ? a : '', selected: a === keep }, i ? a : `${a} (the dataset's first)`))
      : [h('option', { value: '' }, 'dataset default')]));
  };
  fillAssets();
  dsSel.addEventListener('change', fillAssets);
  // The positions engine's costs and bounds (positions strategies only).
  const positions = version.kind === 'positions';
  const fee = h('input', { type: 'number', name: 'fee_bps', min: 0, max: 1000, step: 'any', inputmode: 'decimal', placeholder: '10' });
  const lev = h('input', { type: 'number', name: 'max_leverage', min: 0, max: 100, step: 'any', inputmode: 'decimal', placeholder: '1' });
  const audit = h('select', { name: 'audit' },
    h('option', { value: '' }, 'server default'),
    h('option', { value: 'true' }, 'yes'),
    h('option', { value: 'false' }, 'no'));
  const err = h('p', { class: 'error', role: 'alert' });
  const btn = h('button', { type: 'submit', class: 'primary' }, 'Run');
  const form = h('form', { class: 'stack panel', 'aria-labelledby': 'run-form-title', novalidate: true },
    h('h2', { id: 'run-form-title' }, 'Run this version'),
    h('div', { class: 'fields' },
      field('Dataset version', dsSel),
      field('Asset', asset),
      field('Causality audit', audit, 'Re-runs on prefixes to catch look-ahead; only audited runs are ranked.')),
    positions ? h('div', { class: 'fields' },
      field('Fee (basis points per unit traded)', fee, 'Empty: 10 bps. 0 to 1,000.'),
      field('Maximum leverage (|exposure| bound)', lev, 'Empty: 1 (no leverage). Above 0, at most 100.')) : null,
    field('Params (JSON object)', params, 'Overrides the version’s default params for this run.'),
    err,
    h('div', { class: 'actions' }, btn));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    let p;
    try {
      p = parseParams(params.value);
    } catch (e) {
      err.textContent = e.message;
      params.setAttribute('aria-invalid', 'true');
      params.focus();
      return;
    }
    params.removeAttribute('aria-invalid');
    const body = { strategy_version_id: Number.isNaN(Number(vid)) ? vid : Number(vid), params: p };
    if (dsSel.value) body.dataset_version = dsSel.value;
    if (asset.value) body.asset = asset.value;
    for (const [k, el, lo, hi, what] of [['fee_bps', fee, 0, 1000, 'The fee'], ['max_leverage', lev, 0, 100, 'The maximum leverage']]) {
      if (!positions || el.value === '') continue;
      const n = Number(el.value);
      if (!Number.isFinite(n) || n < lo || n > hi || (k === 'max_leverage' && n === 0)) {
        err.textContent = `${what} must be a number ${k === 'max_leverage' ? 'above 0' : 'from 0'} up to ${hi}.`;
        el.setAttribute('aria-invalid', 'true');
        el.focus();
        return;
      }
      el.removeAttribute('aria-invalid');
      body[k] = n;
    }
    if (audit.value) body.audit = audit.value === 'true';
    btn.disabled = true;
    btn.textContent = 'Queuing…';
    try {
      const run = await post('/runs', body);
      announce('Run queued');
      navigate(`#/runs/${encodeURIComponent(runId(run))}`);
    } catch (e) {
      if (e.status === 401) return;
      err.textContent = e.status === 429
        ? `Too many queued runs${e.retryAfter ? `; try again in ${e.retryAfter} s` : ''}.`
        : `${e.message}${e.code ? ` (${e.code})` : ''}`;
    } finally {
      btn.disabled = false;
      btn.textContent = 'Run';
    }
  });
  return form;
}

export async function render(ctx) {
  const root = clear(ctx.main);
  const vid = ctx.params.id;
  ctx.title(`Version ${vid}`);
  const [v, ds, rl] = await Promise.all([
    api(`/strategies/versions/${encodeURIComponent(vid)}`),
    api('/datasets').catch((e) => { if (e.status === 401) throw e; return []; }),
    api(`/runs${qs({ strategy_version_id: vid, limit: 100 })}`).catch((e) => { if (e.status === 401) throw e; return []; }),
  ]);
  if (ctx.signal.aborted) return;
  const name = pick(v, 'name', 'strategy_name') || 'strategy';
  const sid = pick(v, 'strategy_id');
  root.append(pageHead(ctx, `${name} · version ${pick(v, 'version', 'number') ?? `#${vid}`}`,
    h('a', { class: 'button', href: `#/strategies/new?name=${encodeURIComponent(name)}&from=${encodeURIComponent(vid)}` }, 'New version from this')));
  const submitted = ctx.query.get('submitted');
  if (submitted) {
    root.append(h('p', { class: submitted === 'existing' ? 'warn' : 'panel notice', role: 'status' },
      submitted === 'existing'
        ? 'This exact code was submitted before, so this is the existing version; nothing new was stored.'
        : 'Submitted: the code passed the syntax and contract checks. Run it below.'));
  }
  root.append(h('section', { class: 'panel', 'aria-label': 'Version details' }, dl([
    ['Strategy', sid !== undefined ? link(`#/strategies/${encodeURIComponent(sid)}`, name) : name],
    ['Version id', String(pick(v, 'strategy_version_id', 'id') ?? vid)],
    ['Kind', pick(v, 'kind') !== undefined ? String(v.kind) : null],
    ['Owner', pick(v, 'owner', 'user') !== undefined ? String(pick(v, 'owner', 'user')) : null],
    ['Submitted', pick(v, 'created_at') ? ago(v.created_at) : null],
    ['Code hash', fullHash(pick(v, 'code_hash'))],
    ['Params', v.params && Object.keys(v.params).length ? h('code', null, JSON.stringify(v.params)) : null],
  ])));

  const { list: datasets, defaultVersion } = datasetList(ds);
  root.append(runForm(vid, v, datasets, defaultVersion));

  const runs = rows(rl, 'runs');
  root.append(h('h2', null, 'Runs'));
  const byDs = new Map();
  for (const r of runs) {
    const k = String(pick(r, 'dataset_version') ?? '—');
    if (!byDs.has(k)) byDs.set(k, []);
    byDs.get(k).push(r);
  }
  if (!byDs.size) root.append(h('p', { class: 'muted' }, 'No runs of this version yet.'));
  for (const [k, list] of byDs) {
    root.append(runsTable(list, { caption: `Dataset ${k}`, noStrategy: true }));
  }

  root.append(h('h2', null, 'Code'));
  if (typeof v.code === 'string') {
    root.append(h('pre', { class: 'code-view', tabindex: 0, 'aria-label': 'Strategy code' }, h('code', null, v.code)));
  } else {
    root.append(h('p', { class: 'muted' }, 'The code of a version is visible to its owner and to admins only.'));
  }
}
