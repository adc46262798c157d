// Charts with uPlot (served from our origin under /vendor, copied there from
// node_modules by `npm ci`). uPlot draws on a canvas, is fast on 100k-point
// series and gives drag-to-zoom and hover values in its legend. Around it we
// add what a canvas lacks: a caption, a text summary for screen readers, a
// keyboard-reachable "reset zoom", and a data-points attribute that says how
// many points were actually drawn (the browser tests read it).
import { h } from './dom.js';
import { num, tickLabels, timeTicks, isoMinute } from './format.js';

let loading = null;

/** loadUPlot() -> the uPlot constructor (script and stylesheet added once). */
export function loadUPlot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  if (loading) return loading;
  loading = new Promise((resolve, reject) => {
    const css = h('link', { rel: 'stylesheet', href: '/vendor/uPlot.min.css' });
    document.head.append(css);
    const s = h('script', { src: '/vendor/uPlot.iife.min.js' });
    s.addEventListener('load', () => (window.uPlot ? resolve(window.uPlot) : reject(new Error('uPlot did not load'))));
    s.addEventListener('error', () => {
      loading = null;
      reject(new Error('The chart library is missing on this server (static/vendor/: run `make deps`).'));
    });
    document.head.append(s);
  });
  return loading;
}

const PALETTE = ['#1d5bb8', '#c2410c', '#15803d', '#7e22ce', '#4b5563'];

/**
 * chart(opts) -> {figure, ready: Promise<uPlot|null>}
 * opts: title (caption), summary (text for screen readers), x (array;
 * seconds since epoch when time: true, else indices), series [{label,
 * values, color?, fill?, bars?, points?, ring? (a hollow ring around each
 * value: a mark on another series' point), dash?}], time (bool), height,
 * yLabel, yFormat(v) for axis/legend values, signal (AbortSignal: destroys
 * the plot), testid (data-testid on the figure), onXScale(min, max) (called
 * whenever the x range changes: zoom, reset; to make another chart follow),
 * xInteger (x values are counts such as iteration numbers: ticks only at
 * whole numbers, a single value gets one unit of room on each side).
 * xUnit: what one x value is, plural, for the count under the chart
 * ("86,400 bars", "3 iterations"; default "points").
 * data-points on the figure counts the finite values of all series;
 * data-x-ticks lists the x-axis labels last drawn (for tests).
 * The figure is returned at once; the plot fills it when uPlot has loaded.
 */
export function chart(opts) {
  const box = h('div', { class: 'chart-box' });
  const status = h('span', { class: 'muted' });
  const resetBtn = h('button', { type: 'button', class: 'small', disabled: true }, 'Reset zoom');
  const figure = h('figure', { class: 'chart', 'data-testid': opts.testid || null },
    h('figcaption', null, opts.title),
    opts.summary ? h('p', { class: 'visually-hidden' }, opts.summary) : null,
    box,
    h('div', { class: 'chart-tools' }, resetBtn,
      h('span', { class: 'muted' }, 'Drag across the chart to zoom; hover for values; double-click resets.'), status));

  const count = opts.series.reduce((n, s) => n + s.values.filter((v) => v !== null && v !== undefined && Number.isFinite(v)).length, 0);
  figure.dataset.points = '0';

  const ready = loadUPlot().then((UPlot) => {
    if (opts.signal && opts.signal.aborted) return null;
    const fmt = opts.yFormat || ((v) => num(v, 4));
    // dated x values (seconds) read as ISO dates in UTC on the axis and in the legend
    const series = [{ label: opts.time ? 'Time (UTC)' : (opts.xLabel || 'x'), value: opts.time ? (u, v) => isoMinute(v) : (u, v) => (v === null ? '—' : num(v, 0)) }];
    opts.series.forEach((s, i) => {
      const color = s.color || PALETTE[i % PALETTE.length];
      const def = {
        label: s.label,
        stroke: color,
        width: s.width || 1.5,
        value: (u, v) => (v === null || v === undefined ? '—' : fmt(v)),
        spanGaps: false,
      };
      if (s.fill) def.fill = s.fill;
      if (s.dash) def.dash = s.dash;
      if (s.bars) {
        def.paths = UPlot.paths.bars({ size: [0.6, 40] });
        def.fill = s.fill || color;
        def.points = { show: false };
      } else if (s.ring) {
        // a hollow ring drawn larger than the points, so the point it marks stays visible inside it
        def.points = { show: true, size: 14, width: 3, stroke: color, fill: 'rgba(0,0,0,0)' };
      } else if (s.points) {
        def.points = { show: true, size: 6, fill: color };
      } else {
        def.points = { show: false };
      }
      series.push(def);
    });
    const xAxis = { stroke: '#4a5567', grid: { stroke: '#e4e8ee' } };
    if (opts.xInteger) {
      // whole steps only, so two iterations never get a "1.5" tick
      xAxis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
      xAxis.values = (u, vals) => {
        const labels = vals.map((v) => num(v, 0));
        figure.dataset.xTicks = labels.join(' ');
        return labels;
      };
    }
    if (opts.time) {
      xAxis.values = (u, vals) => {
        const labels = timeTicks(vals);
        figure.dataset.xTicks = labels.join(' | ');
        return labels;
      };
      xAxis.size = 56;    // room for the two-line ticks of an intraday range
      xAxis.space = 90;   // px between ticks: a yyyy-mm-dd label is about 70 px wide
    }
    const xScale = opts.series.some((q) => q.bars)
      ? { time: false, range: (u, lo, hi) => [lo - 0.5, hi + 0.5] }
      : opts.xInteger ? { time: false, range: (u, lo, hi) => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]) }
        : { time: !!opts.time };
    const width = Math.max(260, Math.floor(box.getBoundingClientRect().width || figure.parentElement?.clientWidth || 600));
    const plot = new UPlot({
      width,
      height: opts.height || 260,
      // bars get half a slot of room at both ends, so the edge bars show whole
      scales: { x: xScale },
      series,
      axes: [
        xAxis,
        { stroke: '#4a5567', grid: { stroke: '#e4e8ee' }, size: 64, values: (u, vals) => (opts.yFormat ? vals.map((v) => fmt(v)) : tickLabels(vals)) },
      ],
      // ticks of a dated axis fall on UTC days and hours, as they are labelled
      ...(opts.time ? { tzDate: (ts) => UPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') } : {}),
      cursor: { drag: { x: true, y: false, setScale: true } },
      legend: { live: true },
      hooks: {
        setScale: [(u, key) => {
          if (key !== 'x') return;
          const full = u.data[0];
          const zoomed = full.length > 1 && (u.scales.x.min > full[0] || u.scales.x.max < full[full.length - 1]);
          resetBtn.disabled = !zoomed;
          if (opts.onXScale) opts.onXScale(u.scales.x.min, u.scales.x.max);
        }],
      },
    }, [opts.x, ...opts.series.map((s) => s.values)], box);
    // The legend is uPlot's own table; name it for assistive technology.
    const legend = box.querySelector('.u-legend');
    if (legend) legend.setAttribute('aria-label', `${opts.title}: values at the cursor`);
    const canvas = box.querySelector('canvas');
    if (canvas) {
      canvas.setAttribute('role', 'img');
      canvas.setAttribute('aria-label', opts.summary || opts.title);
    }
    figure.dataset.points = String(count);
    status.textContent = `${num(opts.x.length, 0)} ${opts.xUnit || 'points'}`;
    resetBtn.addEventListener('click', () => {
      const xs = plot.data[0];
      if (xs.length) plot.setScale('x', { min: xs[0], max: xs[xs.length - 1] });
    });
    const ro = new ResizeObserver(() => {
      const w = Math.floor(box.getBoundingClientRect().width);
      if (w > 0 && Math.abs(w - plot.width) > 2) plot.setSize({ width: w, height: plot.height });
    });
    ro.observe(box);
    if (opts.signal) opts.signal.addEventListener('abort', () => { ro.disconnect(); plot.destroy(); }, { once: true });
    figure.uplot = plot;
    return plot;
  }).catch((e) => {
    box.append(h('p', { class: 'warn' }, e.message));
    return null;
  });
  return { figure, ready };
}

/** drawdown(equity) -> [dd...]: equity / running max − 1 (≤ 0), nulls kept. */
export function drawdown(equity) {
  let peak = -Infinity;
  return equity.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    if (v > peak) peak = v;
    return peak > 0 ? v / peak - 1 : 0;
  });
}
