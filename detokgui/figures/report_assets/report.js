// detokgui HTML report: the token search over the precomputed top-k table.
// The table is in the page (base64 typed arrays, see figures/report.py): nothing is fetched.
"use strict";
(function () {
  const SPACE_MARK = "\u2423";
  const meta = JSON.parse(document.getElementById("dg-table-meta").textContent);
  const vocab = JSON.parse(document.getElementById("dg-vocab").textContent);

  function bytesOf(id) {
    const text = document.getElementById(id).textContent.trim();
    const raw = atob(text);
    const out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out.buffer;
  }
  function intArray(id) {
    const buf = bytesOf(id);
    return meta.id_bytes === 2 ? new Uint16Array(buf) : new Uint32Array(buf);
  }
  // IEEE 754 half precision, little-endian (numpy float16), to a number.
  function halfToFloat(h) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
    if (exp === 31) return frac ? NaN : sign * Infinity;
    return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
  }

  const rows = intArray("dg-rows");
  const keys = intArray("dg-keys");
  const scores = new Uint16Array(bytesOf("dg-scores"));
  const H = meta.heads.length, K = meta.k;
  const rowOf = new Map();
  for (let r = 0; r < rows.length; r++) rowOf.set(rows[r], r);
  const idOf = new Map();
  for (let i = 0; i < vocab.length; i++) if (!idOf.has(vocab[i])) idOf.set(vocab[i], i);

  // What a person types (" Korea", "␣Korea", "\n") as the display form of a token.
  function displayForm(text) {
    return text.startsWith(" ") ? SPACE_MARK + text.slice(1) : text;
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const input = document.getElementById("dg-search");
  const status = document.getElementById("dg-status");
  const result = document.getElementById("dg-result");
  const list = document.getElementById("dg-suggestions");

  function suggest(form) {
    list.replaceChildren();
    if (!form) return;
    const low = form.toLowerCase();
    let n = 0;
    for (let r = 0; r < rows.length && n < 30; r++) {
      const t = vocab[rows[r]];
      if (t.toLowerCase().startsWith(low)) { list.appendChild(el("option", { value: t })); n++; }
    }
  }

  function show() {
    const form = displayForm(input.value);
    suggest(form);
    result.replaceChildren();
    if (!form) { status.textContent = "Type a token."; return; }
    const id = idOf.get(form);
    if (id === undefined) {
      status.textContent = "No token of the vocabulary is written " + JSON.stringify(form) +
        " (a leading space is a token's first character: type \" Korea\" or \"" +
        SPACE_MARK + "Korea\").";
      return;
    }
    const r = rowOf.get(id);
    if (r === undefined) {
      status.textContent = "Token " + id + " (" + form + ") is not in this report's table: " +
        meta.rows_text;
      return;
    }
    status.textContent = "Query token " + id + " " + form + ": its " + K +
      " highest-scoring keys by T_ee per head (" + meta.sigma + ").";
    const table = el("table", { id: "dg-topk", "data-query-id": String(id) });
    const head = el("tr");
    head.appendChild(el("th", {}, "head"));
    for (let k = 0; k < K; k++) head.appendChild(el("th", {}, "key " + (k + 1)));
    table.appendChild(head);
    for (let h = 0; h < H; h++) {
      const tr = el("tr");
      const label = meta.labels ? meta.labels[h] : "";
      tr.appendChild(el("th", {}, meta.heads[h] + (label ? " (" + label + ")" : "")));
      for (let k = 0; k < K; k++) {
        const at = (r * H + h) * K + k;
        const key = keys[at], score = halfToFloat(scores[at]);
        const td = el("td", { "data-head": String(meta.heads[h]), "data-rank": String(k + 1),
                              "data-key-id": String(key), "data-score": String(score) });
        td.appendChild(el("span", { class: "tok" }, vocab[key]));
        td.appendChild(el("span", { class: "score" }, score.toPrecision(4)));
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
    result.appendChild(table);
  }

  input.addEventListener("input", show);
  input.value = meta.example || "";
  show();
  document.body.setAttribute("data-search-ready", "1");
})();
