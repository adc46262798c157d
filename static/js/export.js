// Exports built in the page: objects as CSV text, and a download of text the
// page holds (a Blob behind a temporary object URL, no server round trip).
// toCsv is pure (tests/browser/units.test.mjs checks it).

/** csvCell(v) -> v as one RFC 4180 field (quoted when it holds , " or a line break). */
function csvCell(v) {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** toCsv(rows) -> CSV text: a header of every key in order of first use, one line a row. */
export function toCsv(rows) {
  const keys = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  return [keys.map(csvCell).join(','), ...rows.map((r) => keys.map((k) => csvCell(r[k])).join(','))].join('\r\n') + '\r\n';
}

/** download(filename, type, text): offers text to the browser as a file. */
export function download(filename, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
