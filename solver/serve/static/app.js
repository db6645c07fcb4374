// The confsolve configurator page. Everything it draws comes from the pack description
// (/api/pack) and the state of the request (/api/state); nothing here names a launcher, a field
// or a value. State lives in the URL query (?field=value&...), so a link is a permalink.
"use strict";

const MODEL_PARAM = "_model";  // the model path in the URL (no field starts with "_")
const CHIP_LIMIT = 32;       // more values than this: a drop-down list instead of chips
const FOLD_EXCLUDED = 10;    // more values than this: excluded ones fold behind "+N excluded"
const SCOPE_WORDS = {
  facts: "impossible on this hardware or model",
  // An option's value the given facts allow, refused for a fact nobody gave that the answer
  // assumes (a model's head size): resolve would refuse it, so it is greyed; set the fact if
  // yours differs.
  assumed: "excluded for the facts assumed (not given)",
  choices: "excluded by your other choices",
};
const SCOPE_HINT = { assumed: "set the assumed fact if yours differs: see Assumed" };
const SOURCE_WORDS = {
  user: "you set it", fact: "given", "model-config": "from the model's config.json",
  assumed: "assumed", env: "from the environment", detected: "detected",
  adjusted: "adjusted from your value",
};

const S = {
  pack: null, fields: {}, order: [],
  set: {}, keep: [], undo: [],
  state: null, good: null, reasons: null, prevValues: null,
  seq: 0, info: null, tab: "full", unfolded: new Set(), clickStart: null, rows: {},
};
window.confsolveTimings = [];

const $ = (sel, root = document) => root.querySelector(sel);
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}

class ApiError extends Error {}
async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  let response;
  try { response = await fetch(path, init); } catch (e) { throw new ApiError("the server does not answer: is confsolve serve still running?"); }
  let doc = null;
  try { doc = await response.json(); } catch (e) { /* not JSON: fall through */ }
  if (!response.ok || !doc || doc.status === "error" || doc.verdict === "error") {
    const msg = doc && doc.error ? doc.error.message : `HTTP ${response.status}`;
    throw new ApiError(msg);
  }
  return doc;
}

function showError(message) {
  const banner = $("#error-banner");
  banner.textContent = message || "";
  banner.hidden = !message;
}

// --- names and words ----------------------------------------------------------------------
function fieldTitle(f) { return f.name; }
function valueLabel(f, v) { return f.labels[v] || ""; }
function describePin(name, value) {
  const f = S.fields[name];
  if (!f) return `${name}=${value}`;
  if (f.kind === "option") return `${f.flag} ${value}`;
  const label = valueLabel(f, value);
  return label ? `${name}=${value} (${label})` : `${name}=${value}`;
}
function reasonText(reason) {
  if (!reason) return "";
  const pins = reason.pins.map((p) => `${describePin(p.field, p.value)} (${SOURCE_WORDS[p.source] || p.source})`);
  const rules = reason.rules.map((r) => `${r.id}: ${r.because}`);
  return [...pins, ...rules].join("\n");
}
function scopeTitle(scope, reason) {
  return [`${SCOPE_WORDS[scope]}:`, reason, SCOPE_HINT[scope] ? `(${SCOPE_HINT[scope]})` : ""].filter(Boolean).join("\n");
}
function badge(kind) { return el("span", { class: `badge b-${kind}`, text: kind }); }
function provenanceKind(name) {
  const res = S.state && S.state.resolution;
  if (!res) return null;
  if ((res.assumed || []).some((a) => a.field === name)) return "assumed";
  const p = res.provenance[name];
  if (!p) return null;
  if (p.kind === "fact" && p.source === "assumed") return "assumed";
  return p.kind;
}

// --- the URL ------------------------------------------------------------------------------
function readUrl() {
  const params = new URLSearchParams(location.search);
  const set = {};
  const unknown = [];
  for (const [k, v] of params) {
    if (k === MODEL_PARAM) $("#model-path").value = v;
    else if (S.fields[k]) set[k] = v; else unknown.push(k);
  }
  if (unknown.length) showError(`The link names fields this pack does not have, left out: ${unknown.join(", ")}`);
  return set;
}
function writeUrl(push) {
  const params = new URLSearchParams();
  for (const name of S.order) if (name in S.set) params.set(name, S.set[name]);
  const model = $("#model-path").value.trim();
  if (model) params.set(MODEL_PARAM, model);
  const query = params.toString();
  const url = query ? `?${query}` : location.pathname;
  if (url === location.search || (!query && !location.search)) return;
  if (push) history.pushState({ set: S.set }, "", url); else history.replaceState({ set: S.set }, "", url);
}

// --- building the page once ---------------------------------------------------------------
function buildFields() {
  const root = $("#fields");
  root.textContent = "";
  const sections = [
    ["inputs", "Machine and model", false],
    ["traits", "Traits of the machine and model (usually implied)", true],
    ["options", "Options", false],
    ["environment", "Environment variables", true],
  ];
  for (const [key, title, folded] of sections) {
    const fields = S.pack.fields.filter((f) => f.section === key);
    if (!fields.length) continue;
    const section = folded
      ? el("details", { class: "section", id: `section-${key}` }, el("summary", { text: title }))
      : el("section", { class: "section", id: `section-${key}` }, el("h2", { text: title }));
    if (key === "inputs" && S.pack.reads_model_config) section.append(buildPaste());
    let group = null;
    for (const f of fields) {
      if (f.group !== group) {
        group = f.group;
        section.append(el("div", { class: "group-title", text: group }));
      }
      section.append(buildRow(f));
    }
    root.append(section);
  }
}

function buildRow(f) {
  const row = el("div", { class: "row", id: `row-${f.name}`, "data-field": f.name });
  const name = el("div", { class: "name" },
    el("span", {},
      el("span", { class: "field-name", text: fieldTitle(f) }),
      el("button", { type: "button", class: "info-btn", "data-info": f.name,
                     "aria-label": `about ${f.name}`, title: "field info", text: "i" })),
    f.flag ? el("span", { class: "flag mono", text: f.flag }) : null,
    el("span", { class: "now" }));
  const values = el("div", { class: "values", role: "group", "aria-label": f.name });
  row.append(name, values);
  return row;
}

function buildPaste() {
  const area = el("textarea", { id: "config-json", "aria-label": "a model's config.json",
                                placeholder: '{"architectures": ["..."], "quantization_config": {...}}' });
  const file = el("input", { type: "file", accept: ".json,application/json", "aria-label": "upload config.json" });
  file.addEventListener("change", async () => {
    if (file.files.length) area.value = await file.files[0].text();
  });
  const read = el("button", { type: "button", id: "read-config", text: "Read the model's facts" });
  read.addEventListener("click", readConfig);
  // what the reader says it read otherwise than as written (an unread KV scheme: the launcher's
  // fallback), shown under the button until the next read
  const notes = el("ul", { class: "config-notes", id: "config-notes", hidden: true });
  return el("details", { class: "paste", id: "paste" },
    el("summary", { text: "Paste or upload a model's config.json" }),
    area, el("div", { class: "values" }, file, read), notes);
}

function showConfigNotes(notes) {
  const list = $("#config-notes");
  list.replaceChildren(...(notes || []).map((note) => el("li", { text: note })));
  list.hidden = !list.childElementCount;
}

async function readConfig() {
  let config;
  showConfigNotes([]);
  try { config = JSON.parse($("#config-json").value); } catch (e) {
    showError(`The pasted text is not JSON: ${e.message}`);
    return;
  }
  try {
    const doc = await api("/api/model-config", { config });
    showError("");
    showConfigNotes(doc.notes);
    remember();
    Object.assign(S.set, doc.facts);
    S.keep = [];
    await update(true);
  } catch (e) { showError(e.message); }
}

// --- one state ----------------------------------------------------------------------------
function remember() {
  S.undo.push({ ...S.set });
  if (S.undo.length > 100) S.undo.shift();
  $("#undo").disabled = false;
}

async function choose(name, value) {
  S.clickStart = performance.now();
  remember();
  if (value === null) delete S.set[name]; else S.set[name] = value;
  S.keep = value === null ? [] : [name];
  await update(true);
}

async function update(push) {
  const seq = ++S.seq;
  const started = S.clickStart ?? performance.now();
  S.clickStart = null;
  const pill = $("#status-pill");
  pill.className = "pill busy";
  pill.textContent = "working…";
  let doc;
  try {
    doc = await api("/api/state", { set: S.set, keep: S.keep });
  } catch (e) {
    if (seq !== S.seq) return;
    showError(e.message);
    pill.className = "pill bad";
    pill.textContent = "error";
    document.body.dataset.seq = String(seq);
    return;
  }
  if (seq !== S.seq) return;  // a later click has been sent: its answer will draw
  const answered = performance.now();
  showError("");
  S.state = doc;
  if (doc.choices) { S.good = doc; S.reasons = null; }  // in a conflict the last choices stay
  writeUrl(push);
  render();
  const drawn = performance.now();
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const ms = performance.now() - started;
  window.confsolveTimings.push({ ms, server: doc.elapsed_ms, serverCpu: doc.cpu_ms,
                                 helperCpu: doc.helper_cpu_ms || 0, status: doc.verdict,
                                 fetch: answered - started, render: drawn - answered });
  $("#timing").textContent = `last answer: ${ms.toFixed(0)} ms (server ${doc.elapsed_ms} ms)`;
  document.body.dataset.seq = String(seq);
  document.body.dataset.status = doc.verdict;
  if (doc.choices) loadReasons(seq);
}

async function loadReasons(seq) {
  try {
    const doc = await api("/api/reasons", { set: S.set });
    if (seq !== S.seq) return;
    S.reasons = doc.reasons;
    for (const chip of document.querySelectorAll("[data-excluded]")) {
      const r = S.reasons[chip.dataset.field] && S.reasons[chip.dataset.field][chip.dataset.value];
      if (r) chip.title = scopeTitle(r.scope, reasonText(r));
    }
    if (S.info) renderInfo();
    document.body.dataset.reasons = String(seq);
  } catch (e) { /* reasons are extra: the state is already shown */ }
}

// --- drawing ------------------------------------------------------------------------------
function render() {
  const doc = S.state;
  const ok = doc.verdict === "resolved";
  const pill = $("#status-pill");
  pill.className = ok ? "pill ok" : doc.verdict === "conflict" ? "pill bad" : "pill";
  pill.textContent = ok ? "✓ resolves" : doc.verdict === "conflict" ? "✗ conflict"
    : `next: choose ${doc.needs.join(", ")}`;
  const values = ok ? doc.resolution.values : null;
  const conflictFields = new Set(doc.verdict === "conflict" ? doc.conflict.pins.map((p) => p.field) : []);
  const focused = document.activeElement;
  const refocus = focused && focused.dataset ? [focused.dataset.field, focused.dataset.value, focused.tagName] : null;
  const changed = [];
  for (const f of S.pack.fields) {
    const row = S.rows[f.name];
    const kind = values ? provenanceKind(f.name) : null;
    const choices = S.good && S.good.choices ? S.good.choices[f.name] : null;
    // Rows are redrawn only when what they show changed: a click moves a few fields, and
    // rebuilding every chip of every field is most of the page's share of a click.
    const sig = JSON.stringify([S.set[f.name] ?? null, values ? values[f.name] : null, choices,
                                S.unfolded.has(f.name), !!S.reasons]);
    if (row._sig !== sig) { renderValues(f, row); row._sig = sig; }
    row.classList.toggle("in-conflict", conflictFields.has(f.name));
    row.classList.toggle("needed", doc.verdict === "incomplete" && doc.needs.includes(f.name));
    row.classList.toggle("selected-info", S.info === f.name);
    const before = S.prevValues && values ? S.prevValues[f.name] : undefined;
    const moved = before !== undefined && before !== null && before !== values[f.name];
    if (moved) changed.push(row);
    const nowSig = JSON.stringify([values ? values[f.name] : null, kind, moved ? before : null]);
    if (row._nowSig === nowSig) continue;
    row._nowSig = nowSig;
    const now = $(".now", row);
    now.textContent = "";
    if (values) {
      now.append(el("span", { class: "mono", text: values[f.name] }), badge(kind));
      if (moved) now.append(el("span", { class: "was", text: `was ${before}` }));
    }
  }
  if (values) {
    // Restart the highlight on the rows that changed with this click (one layout, not one per row).
    for (const row of document.querySelectorAll(".row.changed")) row.classList.remove("changed");
    if (changed.length) {
      void document.body.offsetWidth;
      for (const row of changed) row.classList.add("changed");
    }
  }
  if (values) S.prevValues = { ...values };
  if (refocus && refocus[0]) {
    const sel = refocus[2] === "SELECT" ? `select[data-field="${CSS.escape(refocus[0])}"]`
      : `[data-field="${CSS.escape(refocus[0])}"][data-value="${CSS.escape(refocus[1] || "")}"]`;
    const again = $(sel);
    if (again) again.focus();
  }
  renderConflict();
  renderCommand();
  renderNotes();
  if (S.info) renderInfo();
}

function chipsFor(f) {
  const choices = S.good && S.good.choices ? S.good.choices[f.name] : null;
  const chosen = S.set[f.name];
  const resolved = S.state.verdict === "resolved" ? S.state.resolution.values[f.name] : null;
  return f.domain.map((v) => {
    const scope = choices ? choices.excluded[v] : undefined;
    const warned = choices ? choices.warned[v] : undefined;
    return { value: v, scope, warned, chosen: chosen === v, resolved: chosen === undefined && resolved === v };
  });
}

function renderValues(f, row) {
  const box = $(".values", row);
  box.textContent = "";
  const items = chipsFor(f);
  const unsetWord = f.kind === "option" ? "auto" : "unknown";
  if (f.domain.length > CHIP_LIMIT) {
    box.append(renderSelect(f, items, unsetWord));
  } else {
    const folded = f.domain.length > FOLD_EXCLUDED && !S.unfolded.has(f.name);
    box.append(chip(f, { value: null, chosen: !(f.name in S.set) }, unsetWord));
    let hidden = 0;
    for (const item of items) {
      if (folded && item.scope && !item.chosen) { hidden++; continue; }
      box.append(chip(f, item));
    }
    if (hidden) {
      box.append(el("button", { type: "button", class: "chip more", "data-unfold": f.name,
                                "aria-label": `show ${hidden} excluded values of ${f.name}`,
                                text: `+${hidden} excluded` }));
    } else if (f.domain.length > FOLD_EXCLUDED && S.unfolded.has(f.name)) {
      box.append(el("button", { type: "button", class: "chip more", "data-fold": f.name, text: "fold excluded" }));
    }
  }
  if (f.open) box.append(otherNumber(f));
  if (f.kind === "fact" && (Object.keys(f.aliases).length || (Object.keys(f.labels).length && f.domain.length > 8))) {
    box.append(lookup(f));
  }
}

function chip(f, item, unsetWord) {
  const v = item.value;
  const classes = ["chip"];
  const label = v === null ? "" : valueLabel(f, v);
  if (v === null) classes.push("auto");
  if (label && f.kind === "fact") classes.push("card-chip");
  if (item.chosen) classes.push("chosen");
  if (item.resolved) classes.push("resolved");
  if (item.scope) classes.push(`x-${item.scope}`);
  if (item.warned) classes.push("warned");
  let title = label;
  if (item.scope) {
    const r = S.reasons && S.reasons[f.name] && S.reasons[f.name][v];
    title = scopeTitle(item.scope, r ? reasonText(r) : "(the reason is loading…)");
  } else if (item.warned) {
    title = `⚠ ${item.warned.rule}: ${item.warned.because}`;
  } else if (v === null) {
    title = f.kind === "option" ? "let the solver choose" : "not known: any value the rules allow";
  }
  const state = item.scope ? `, ${SCOPE_WORDS[item.scope]}` : item.warned ? ", warned" : "";
  const node = el("button", {
    type: "button", class: classes.join(" "), "data-field": f.name, "data-value": v === null ? "" : v,
    "data-excluded": item.scope || null, "aria-pressed": item.chosen ? "true" : "false",
    "aria-label": `${f.name} ${v === null ? unsetWord : v}${state}`, title,
  }, v === null ? unsetWord : `${v}${item.warned ? " ⚠" : ""}`);
  if (label && f.kind === "fact") node.append(el("span", { class: "sub", text: label }));
  return node;
}

function renderSelect(f, items, unsetWord) {
  const select = el("select", { class: "big", "data-field": f.name, "aria-label": f.name });
  select.append(el("option", { value: "", text: unsetWord }));
  for (const item of items) {
    const mark = item.scope ? "✗ " : item.warned ? "⚠ " : "";
    const label = valueLabel(f, item.value);
    select.append(el("option", {
      value: item.value, class: item.scope ? `x-${item.scope}` : null,
      title: item.scope ? SCOPE_WORDS[item.scope] : null,
      text: `${mark}${item.value}${label ? ` — ${label}` : ""}${item.resolved ? "  (auto)" : ""}`,
    }));
  }
  select.value = S.set[f.name] ?? "";
  const possible = items.filter((i) => !i.scope).length;
  return el("span", { class: "values" }, select,
    el("span", { class: "muted small", text: `${possible} of ${items.length} possible` }));
}

function lookup(f) {
  const listId = `names-${f.name}`;
  const list = el("datalist", { id: listId });
  const names = new Set();
  for (const [value, aliases] of Object.entries(f.aliases)) for (const a of aliases) names.add(a);
  for (const v of f.domain) names.add(v);
  for (const n of names) list.append(el("option", { value: n }));
  const input = el("input", { class: "lookup", list: listId, "data-lookup": f.name,
                              placeholder: Object.keys(f.aliases).length ? `type a name (e.g. ${Object.values(f.aliases)[0][0]})`
                                : "find by name…",
                              "aria-label": `${f.name} by name` });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") pickByName(f, input.value); });
  input.addEventListener("change", () => pickByName(f, input.value));
  return el("span", {}, input, list);
}

function otherNumber(f) {
  const chosen = S.set[f.name];
  const custom = chosen !== undefined && !f.domain.includes(chosen);
  const input = el("input", { type: "number", class: "lookup number", min: f.open.min, max: f.open.max,
                              step: 1, "data-other": f.name, value: custom ? chosen : null,
                              placeholder: `other (${f.open.min}${f.open.max === null ? "+" : `–${f.open.max}`})`,
                              "aria-label": `${f.name}: another whole number` });
  const commit = () => {
    const text = input.value.trim();
    if (text && text !== S.set[f.name]) choose(f.name, text);
  };
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") commit(); });
  input.addEventListener("change", commit);
  return input;
}

function pickByName(f, text) {
  const wanted = text.trim().toLowerCase();
  if (!wanted) return;
  let found = f.domain.find((v) => v.toLowerCase() === wanted);
  if (!found) {
    for (const [value, aliases] of Object.entries(f.aliases)) {
      if (aliases.some((a) => a.toLowerCase() === wanted)) found = value;
    }
  }
  if (!found) {
    const hits = f.domain.filter((v) => (f.labels[v] || "").toLowerCase().includes(wanted));
    if (hits.length === 1) found = hits[0];
  }
  if (found) { showError(""); choose(f.name, found); } else {
    showError(`No ${f.name} is called "${text}"; pick one of the listed values`);
  }
}

function repairWords(r) {
  const parts = [];
  for (const name of r.unset) {
    const f = S.fields[name];
    const to = r.values[name];
    parts.push(f.kind === "option" ? `leave ${f.flag} on auto (→ ${to})` : `forget ${name} (→ ${to})`);
  }
  const facts = [];
  for (const [name, value] of Object.entries(r.set)) {
    // A fact is stated, not chosen: the repair holds only for a model or machine that is so.
    if (S.fields[name] && S.fields[name].kind === "fact") facts.push(describePin(name, value));
    else parts.push(`use ${describePin(name, value)}`);
  }
  if (facts.length) parts.push(`if it is so, give ${facts.join(" and ")}`);
  return parts.join("; ");
}

function renderConflict() {
  const card = $("#conflict");
  const doc = S.state;
  if (doc.verdict !== "conflict") { card.hidden = true; card.textContent = ""; return; }
  card.hidden = false;
  card.textContent = "";
  card.append(el("h2", { text: "Conflict: these cannot all hold" }));
  if (doc.lead) card.append(el("p", { class: "small", id: "conflict-lead", text: doc.lead }));
  const list = el("ul");
  for (const p of doc.conflict.pins) {
    list.append(el("li", {}, el("span", { class: "mono", text: describePin(p.field, p.value) }),
      ` — ${SOURCE_WORDS[p.source] || p.source}`));
  }
  for (const r of doc.conflict.rules) {
    list.append(el("li", {}, el("span", { class: "mono", text: r.id }), ": ",
      el("span", { class: "rule-because", text: r.because }),
      el("div", { class: "muted small mono", text: r.source })));
  }
  card.append(list);
  const kept = S.keep.filter((n) => n in S.set);
  if (kept.length && !doc.kept) {
    // (A fact's assumed value that failed: giving the fact keeps it, which the lead says.)
    const unless = doc.lead ? " (unless the assumed fact above differs: then give it)" : "";
    card.append(el("div", { class: "lost", text:
      `No repair keeps ${kept.map((n) => describePin(n, S.set[n])).join(", ")}: every way out changes it${unless}.` }));
  }
  card.append(el("h3", { text: doc.repairs.length ? "Repairs (best first)" : "No change of your choices makes this solvable" }));
  doc.repairs.forEach((r, i) => {
    const apply = el("button", { type: "button", class: "primary", "data-repair": String(i),
                                 text: "Apply", "aria-label": `apply repair ${i + 1}: ${repairWords(r)}` });
    apply.addEventListener("click", () => applyRepair(r));
    card.append(el("div", { class: "repair" },
      el("span", { class: "what" }, `${i + 1}. ${repairWords(r)}`,
        r.undoes.length ? el("div", { class: "undoes", text: `undoes your choice of ${r.undoes.join(", ")}` }) : null),
      apply));
  });
  const back = el("button", { type: "button", text: "↶ Undo the last click" });
  back.addEventListener("click", undo);
  card.append(el("div", { class: "repair" }, el("span", { class: "what muted", text: "or go back" }), back));
}

async function applyRepair(r) {
  S.clickStart = performance.now();
  remember();
  for (const name of r.unset) delete S.set[name];
  for (const [name, value] of Object.entries(r.set)) S.set[name] = String(value);
  S.keep = [];
  await update(true);
}

function renderCommand() {
  const doc = S.state;
  const pre = $("#command-text");
  const note = $("#command-note");
  if (doc.verdict !== "resolved") {
    pre.textContent = doc.verdict === "conflict" ? "(no command: the request has a conflict)"
      : `(no command yet: choose ${doc.needs.join(", ")} first)`;
    note.textContent = "";
    $("#copy-command").disabled = true;
    return;
  }
  $("#copy-command").disabled = false;
  const cmd = doc.command;
  const text = S.tab === "full" ? cmd.full_text : cmd.minimal_text;
  const model = $("#model-path").value.trim();
  pre.textContent = model ? text.replace(cmd.model_placeholder, shellQuote(model)) : text;
  note.textContent = S.tab === "full"
    ? `Every option spelled out (${cmd.full.length} words), so the launcher re-decides nothing.`
    : "Only the options the launcher would not pick by itself (it decides the rest the same way).";
  $("#tab-full").setAttribute("aria-selected", String(S.tab === "full"));
  $("#tab-minimal").setAttribute("aria-selected", String(S.tab === "minimal"));
}

function shellQuote(word) {
  return /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

function renderNotes() {
  const card = $("#notes");
  card.textContent = "";
  const doc = S.state;
  if (doc.verdict !== "resolved") { card.hidden = true; return; }
  const res = doc.resolution;
  const parts = [];
  if (res.adjustments.length) {
    parts.push(el("h3", { text: "Adjusted" }), el("ul", {}, res.adjustments.map((a) =>
      el("li", {}, el("span", { class: "mono", text: `${a.field}: ${a.requested} → ${a.resolved}` }), ` — ${a.because}`))));
  }
  if (res.warnings.length) {
    parts.push(el("h3", { text: "⚠ Warnings" }), el("ul", {}, res.warnings.map((w) =>
      el("li", {}, el("span", { class: "mono", text: w.rule }), `: ${w.message}`))));
  }
  if ((res.assumed || []).length) {
    // The greyed values these exclude (scope `assumed`) work for another model or machine.
    const choices = doc.choices || {};
    const greyed = Object.values(choices).reduce(
      (n, c) => n + Object.values(c.excluded).filter((s) => s === "assumed").length, 0);
    parts.push(el("h3", { text: "Assumed (not given; set them if they differ)" }), el("ul", {}, res.assumed.map((a) =>
      el("li", {}, el("span", { class: "mono", text: `${a.field}=${a.value}` }), ` — ${a.because}`))));
    if (greyed) {
      parts.push(el("p", { class: "small muted", id: "assumed-greyed",
        text: `${greyed} option value${greyed === 1 ? " is" : "s are"} greyed (dotted) only for these assumed facts.` }));
    }
  }
  card.hidden = !parts.length;
  card.append(...parts);
}

function renderInfo() {
  const name = S.info;
  const f = S.fields[name];
  const card = $("#info");
  card.textContent = "";
  const close = el("button", { type: "button", class: "link", text: "close", "aria-label": "close field info" });
  close.addEventListener("click", () => { S.info = null; renderInfoEmpty(); render(); });
  card.append(el("div", { class: "card-head" }, el("h2", { text: `Field: ${name}` }), close));
  card.append(el("p", { text: f.help || "(no help text)" }));
  const meta = [`${f.kind}`, `group ${f.group}`];
  if (f.flag) meta.push(f.flag);
  card.append(el("p", { class: "muted small", text: meta.join(" · ") }));
  const doc = S.state;
  const dl = el("dl");
  if (doc && doc.verdict === "resolved") {
    const p = doc.resolution.provenance[name];
    const dd = el("dd", {}, el("span", { class: "mono", text: doc.resolution.values[name] }), " ", badge(provenanceKind(name)));
    if (p.rule) dd.append(" ", el("span", { class: "mono small", text: p.rule }));
    if (p.because) dd.append(el("div", { class: "small", text: p.because }));
    if (p.rejected && p.rejected.length) {
      dd.append(el("div", { class: "small muted", text: "better-ranked values it could not take:" }),
        el("ul", {}, p.rejected.map((rj) => el("li", { class: "small" },
          el("span", { class: "mono", text: String(rj.value) }), ` — ${rj.because.join(", ")}`))));
    }
    dl.append(el("dt", { text: "Value now" }), dd);
  }
  const choices = S.good && S.good.choices ? S.good.choices[name] : null;
  if (choices) {
    const reasons = S.reasons ? S.reasons[name] : null;
    for (const scope of ["facts", "assumed", "choices"]) {
      const values = Object.entries(choices.excluded).filter(([, s]) => s === scope).map(([v]) => v);
      if (!values.length) continue;
      const list = el("ul");
      for (const v of values) {
        const r = reasons && reasons[v];
        list.append(el("li", { class: "small", "data-reason": v },
          el("span", { class: "mono", text: v }), " — ", r ? reasonText(r).replaceAll("\n", "; ") : "loading…"));
      }
      const hint = SCOPE_HINT[scope] ? el("div", { class: "small muted", text: SCOPE_HINT[scope] }) : null;
      dl.append(el("dt", { class: `reason-scope ${scope}`, text: `${SCOPE_WORDS[scope]} (${values.length})` }), el("dd", {}, hint, list));
    }
    const warned = Object.entries(choices.warned);
    if (warned.length) {
      dl.append(el("dt", { text: "⚠ Warned values" }), el("dd", {}, el("ul", {}, warned.map(([v, w]) =>
        el("li", { class: "small" }, el("span", { class: "mono", text: v }), ` — ${w.rule}: ${w.because}`)))));
    }
  }
  const rules = f.rules.map((id) => [id, S.pack.rules[id]]);
  if (rules.length) {
    const list = el("ul", {}, rules.map(([id, r]) => el("li", { class: "small" },
      el("span", { class: "mono", text: id }), r.severity === "warn" ? " ⚠" : "", r.adjusts ? " (adjusts)" : "", `: ${r.because}`)));
    const box = rules.length > 8 ? el("details", {}, el("summary", { text: `${rules.length} rules mention it` }), list) : list;
    dl.append(el("dt", { text: `Rules that mention it (${rules.length})` }), el("dd", {}, box));
  }
  if (f.preferences.length) {
    const list = el("ul", {}, f.preferences.map((id) =>
      el("li", { class: "small" }, el("span", { class: "mono", text: id }), `: ${S.pack.preferences[id].because}`)));
    const box = f.preferences.length > 6
      ? el("details", {}, el("summary", { text: `${f.preferences.length} preferences rank its values` }), list) : list;
    dl.append(el("dt", { text: `Preferences (${f.preferences.length})` }), el("dd", {}, box));
  }
  if (f.neighbours.length) {
    const dd = el("dd", {});
    f.neighbours.forEach((n, i) => {
      if (i) dd.append(", ");
      dd.append(el("button", { type: "button", class: "link", "data-info": n, text: n }));
    });
    dl.append(el("dt", { text: "Neighbours in the graph" }), dd);
  }
  card.append(dl);
}

function renderInfoEmpty() {
  const card = $("#info");
  card.textContent = "";
  card.append(el("h2", { text: "Field info" }),
    el("p", { class: "muted", text: "Choose “i” beside a field, or hover a greyed value, to see why." }));
}

async function undo() {
  if (!S.undo.length) return;
  S.clickStart = performance.now();
  S.set = S.undo.pop();
  S.keep = [];
  $("#undo").disabled = !S.undo.length;
  await update(true);
}

async function copy(text, button) {
  window.confsolveCopied = text;
  try { await navigator.clipboard.writeText(text); } catch (e) {
    const area = el("textarea", { style: "position:fixed;opacity:0" });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  const was = button.textContent;
  button.textContent = "Copied ✓";
  setTimeout(() => { button.textContent = was; }, 1500);
}

// --- events -------------------------------------------------------------------------------
function wire() {
  $("#fields").addEventListener("click", (e) => {
    const info = e.target.closest("[data-info]");
    if (info) { openInfo(info.dataset.info); return; }
    const unfold = e.target.closest("[data-unfold]");
    if (unfold) { S.unfolded.add(unfold.dataset.unfold); render(); return; }
    const fold = e.target.closest("[data-fold]");
    if (fold) { S.unfolded.delete(fold.dataset.fold); render(); return; }
    const target = e.target.closest("button[data-field]");
    if (!target) return;
    const value = target.dataset.value === "" ? null : target.dataset.value;
    if (value === (S.set[target.dataset.field] ?? null)) return;
    if (target.dataset.excluded) S.info = target.dataset.field;
    choose(target.dataset.field, value);
  });
  $("#fields").addEventListener("change", (e) => {
    const select = e.target.closest("select[data-field]");
    if (select) choose(select.dataset.field, select.value === "" ? null : select.value);
  });
  // A person rests the pointer on a value (or tabs to it) before choosing it: the state it would
  // make is asked for then, so that the click finds it computed or under way.
  for (const id of ["#fields", "#conflict"]) {
    $(id).addEventListener("pointerover", (e) => hovered(e.target));
    $(id).addEventListener("focusin", (e) => hovered(e.target));
  }
  $("#fields").addEventListener("mouseover", (e) => {
    const target = e.target.closest("[data-excluded]");
    if (target && S.info !== target.dataset.field) openInfo(target.dataset.field, true);
  });
  $("#info").addEventListener("click", (e) => {
    const info = e.target.closest("[data-info]");
    if (info) openInfo(info.dataset.info);
  });
  $("#undo").addEventListener("click", undo);
  $("#reset").addEventListener("click", () => { S.clickStart = performance.now(); remember(); S.set = {}; S.keep = []; update(true); });
  $("#copy-link").addEventListener("click", (e) => copy(location.href, e.currentTarget));
  $("#copy-command").addEventListener("click", (e) => copy($("#command-text").textContent, e.currentTarget));
  $("#model-path").addEventListener("input", () => { if (S.state) { renderCommand(); writeUrl(false); } });
  $("#tab-full").addEventListener("click", () => { S.tab = "full"; renderCommand(); });
  $("#tab-minimal").addEventListener("click", () => { S.tab = "minimal"; renderCommand(); });
  window.addEventListener("popstate", () => { S.set = readUrl(); S.keep = []; update(false); });
  document.addEventListener("keydown", (e) => {
    if (e.altKey && e.key.toLowerCase() === "z") { e.preventDefault(); undo(); }
    if (e.key === "Escape" && S.info) { S.info = null; renderInfoEmpty(); render(); }
  });
}

const PREFETCH_AFTER_MS = 40;  // a pointer passing over a value is not resting on it
let prefetchTimer = null;
let prefetching = false;
let prefetchNext = null;

function hovered(target) {
  clearTimeout(prefetchTimer);
  const chip = target.closest && target.closest("button[data-field]");
  const repair = target.closest && target.closest("[data-repair]");
  if (S.seq === 0 || !(chip || repair)) return;
  // The request a click on it would send (`choose`, `applyRepair`).
  const set = { ...S.set };
  let keep = [];
  if (chip) {
    const name = chip.dataset.field;
    const value = chip.dataset.value === "" ? null : chip.dataset.value;
    if (value === (S.set[name] ?? null)) return;
    if (value === null) delete set[name]; else { set[name] = value; keep = [name]; }
  } else {
    const r = S.state && S.state.repairs && S.state.repairs[Number(repair.dataset.repair)];
    if (!r) return;
    for (const name of r.unset) delete set[name];
    for (const [name, value] of Object.entries(r.set)) set[name] = String(value);
  }
  prefetchTimer = setTimeout(() => prefetch({ set, keep }), PREFETCH_AFTER_MS);
}

async function prefetch(request) {
  // Answered into the server's cache: one at a time, and only the latest one wanted waits.
  prefetchNext = request;
  if (prefetching) return;
  prefetching = true;
  while (prefetchNext) {
    const body = JSON.stringify(prefetchNext);
    prefetchNext = null;
    try {
      await fetch("/api/prefetch", { method: "POST", headers: { "Content-Type": "application/json" }, body });
    } catch (e) { /* only a head start: the click asks again */ }
  }
  prefetching = false;
}

function openInfo(name, quiet) {
  S.info = name;
  for (const row of document.querySelectorAll(".row.selected-info")) row.classList.remove("selected-info");
  const row = $(`#row-${CSS.escape(name)}`);
  if (row) row.classList.add("selected-info");
  renderInfo();
  if (!quiet && row && !row.getBoundingClientRect().height) row.scrollIntoView({ block: "center" });
}

async function init() {
  try {
    S.pack = await api("/api/pack");
  } catch (e) { showError(e.message); return; }
  for (const f of S.pack.fields) S.fields[f.name] = f;
  S.order = Object.keys(S.fields);
  document.title = `${S.pack.pack.name} configurator · confsolve`;
  $("#pack-name").textContent = `${S.pack.pack.name} ${S.pack.pack.version}`;
  $("#pack-description").textContent = S.pack.pack.description;
  buildFields();
  S.rows = {};
  for (const f of S.pack.fields) S.rows[f.name] = $(`#row-${CSS.escape(f.name)}`);
  wire();
  S.set = readUrl();
  await update(false);
}

init();
