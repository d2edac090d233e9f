/**
 * @file The search service's web page (`GET /`): one self-contained HTML document with inline CSS and
 * JavaScript and no external assets (the favicon is a `data:` URI). Upload, drop or paste an image (or
 * pick a gallery item) and see it large beside its neighbours with scores and labels; k and a label
 * filter (the select lists `GET /labels`; changing either repeats the last query); the gallery can be
 * filtered by label too (`GET /items?label=`). Everything shown comes from the JSON API (`/search`, `/items`, `/labels`),
 * and text from the index is inserted as text, never as HTML.
 *
 * A failed query (an upload that is not an image, say) shows the server's message in the `#error`
 * alert and clears the query image, the neighbours and the heading, so nothing stale or broken stays
 * on screen; the query image is shown only once the server has accepted the query. Only the answer to
 * the latest query is shown, whatever order the answers arrive in.
 */

/** The favicon: a small SVG (four dots, two of them close: neighbours), inline so the page needs no other request. */
export const FAVICON = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d2330"/><circle cx="10" cy="11" r="4" fill="#9cc3ff"/><circle cx="17" cy="14" r="4" fill="#9cc3ff"/><circle cx="23" cy="24" r="3" fill="#f0a05a"/><circle cx="9" cy="24" r="3" fill="#f0a05a"/></svg>',
)}`;

/** Settings the page needs. */
export interface PageSettings {
  maxK: number;
  defaultK: number;
}

/** The page's HTML. */
export function searchPage(settings: PageSettings): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dmlkit image search</title>
<link rel="icon" href="${FAVICON}">
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f5f6f8; }
  header { background: #1d2330; color: #fff; padding: 12px 20px; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  header a { color: #9cc3ff; }
  main { padding: 16px 20px; display: grid; gap: 16px; }
  section { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 15px; margin: 0 0 8px; }
  form { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
  #query img { width: 192px; height: 192px; object-fit: contain; image-rendering: pixelated; border: 1px solid #ccd; background: #fafbfc; margin-top: 8px; }
  #drop-zone { border: 2px dashed #aab; border-radius: 8px; padding: 10px 12px; color: #556; }
  #drop-zone.dragging { border-color: #4a7bd0; background: #eef4ff; color: #1d2330; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(128px, 1fr)); gap: 10px; }
  .card { border: 1px solid #dde; border-radius: 6px; padding: 6px; text-align: center; cursor: pointer; background: #fff; }
  .card:hover { border-color: #4a7bd0; }
  .card img { width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated; }
  .card .label { font-weight: 600; overflow-wrap: anywhere; }
  .card .score, .card .id { font-size: 12px; color: #556; overflow-wrap: anywhere; }
  #error { color: #a00; background: #fdecec; border: 1px solid #e3a3a3; border-radius: 6px; padding: 6px 10px; font-weight: 600; margin-top: 8px; }
  #error[hidden] { display: none; }
</style>
</head>
<body>
<header><h1>dmlkit image search</h1><span id="status">loading...</span><a href="/docs">API docs</a><a href="/metrics">metrics</a></header>
<main>
  <section id="drop-zone">
    <h2>Query</h2>
    <p class="hint">Choose a file, drop an image here, or paste one (Ctrl+V).</p>
    <form id="search-form">
      <input id="file" name="image" type="file" accept="image/*">
      <label>k <input id="k" type="number" min="1" max="${settings.maxK}" value="${settings.defaultK}" style="width: 4em"></label>
      <label>label <select id="label"><option value="">any</option></select></label>
      <button id="search" type="submit">Search</button>
    </form>
    <div id="error" role="alert" hidden></div>
    <div id="query"></div>
  </section>
  <section>
    <h2 id="results-heading">Neighbours<span id="query-name"></span> <span id="took"></span></h2>
    <div id="results" class="grid"></div>
  </section>
  <section>
    <h2>Gallery (click an item to search with it)</h2>
    <p><label>show label <select id="gallery-label"><option value="">all</option></select></label> <span id="gallery-count"></span></p>
    <div id="gallery" class="grid"></div>
    <p><button id="more" type="button">More</button></p>
  </section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let galleryOffset = 0;
/** The query the results show (repeated when k or the label changes): { file } or { id, image }. */
let lastQuery = null;
/** Number of the latest query; answers to earlier ones are dropped. */
let querySeq = 0;
let queryImageUrl = null;

function card(item, extra) {
  const div = document.createElement("div");
  div.className = extra ? "card result" : "card";
  const img = document.createElement("img");
  img.src = item.image;
  img.alt = item.label;
  img.loading = "lazy";
  div.append(img);
  for (const [cls, text] of [["label", item.label], ...(extra ? [["score", "score " + item.score.toFixed(4)]] : []), ["id", item.id]]) {
    const line = document.createElement("div");
    line.className = cls;
    line.textContent = text;
    div.append(line);
  }
  div.addEventListener("click", () => runQuery({ id: item.id, image: item.image }));
  return div;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = message === "";
}

/** Empties the query image, the neighbours and the heading. */
function clearQuery() {
  $("query").replaceChildren();
  if (queryImageUrl) URL.revokeObjectURL(queryImageUrl);
  queryImageUrl = null;
  $("results").replaceChildren();
  $("query-name").textContent = "";
  $("took").textContent = "";
}

async function call(url, init) {
  const response = await fetch(url, init);
  const body = await response.json().catch(() => ({ message: response.statusText }));
  if (!response.ok) throw new Error(body.message || response.status + " " + response.statusText);
  return body;
}

function params() {
  const query = new URLSearchParams({ k: $("k").value });
  if ($("label").value) query.set("label", $("label").value);
  return query;
}

function showQuery(src, name, result) {
  clearQuery();
  const img = document.createElement("img");
  img.src = src;
  img.alt = "query: " + name;
  $("query").replaceChildren(img);
  $("query-name").textContent = " of " + name;
  $("took").textContent = "(" + result.count + " in " + result.tookMs.toFixed(1) + " ms" + ($("label").value ? ", label " + $("label").value : "") + ")";
  $("results").replaceChildren(...result.neighbours.map((n) => card(n, true)));
}

/** Searches with an uploaded file ({ file }) or an indexed item ({ id, image }) and shows the answer or the error. */
async function runQuery(query) {
  lastQuery = query;
  const seq = ++querySeq;
  showError("");
  try {
    let result;
    if (query.file) {
      const form = new FormData();
      form.append("image", query.file);
      result = await call("/search?" + params(), { method: "POST", body: form });
    } else {
      const search = params();
      search.set("id", query.id);
      result = await call("/search?" + search);
    }
    if (seq !== querySeq) return;
    const src = query.file ? URL.createObjectURL(query.file) : query.image;
    showQuery(src, query.file ? query.file.name : query.id, result);
    if (query.file) queryImageUrl = src;
  } catch (err) {
    if (seq !== querySeq) return;
    clearQuery();
    showError(err.message);
  }
}

function searchUpload() {
  const file = $("file").files[0];
  if (!file) {
    clearQuery();
    return showError("Choose an image first.");
  }
  runQuery({ file });
}

async function loadLabels() {
  try {
    const { labels } = await call("/labels");
    for (const select of [$("label"), $("gallery-label")]) {
      for (const { label, count } of labels) {
        const option = document.createElement("option");
        option.value = label;
        option.textContent = label + " (" + count + ")";
        select.append(option);
      }
    }
  } catch (err) {
    showError(err.message);
  }
}

/** Number of the latest gallery request; pages of an earlier filter are dropped. */
let gallerySeq = 0;

async function loadGallery() {
  const seq = gallerySeq;
  const label = $("gallery-label").value;
  try {
    const search = new URLSearchParams({ limit: "40", offset: String(galleryOffset) });
    if (label) search.set("label", label);
    const page = await call("/items?" + search);
    if (seq !== gallerySeq) return;
    $("gallery").append(...page.items.map((item) => card(item, false)));
    galleryOffset += page.items.length;
    $("more").disabled = galleryOffset >= page.total;
    $("gallery-count").textContent = label ? page.total + " items labelled " + label : "";
    if (!label) $("status").textContent = page.total + " items";
  } catch (err) {
    showError(err.message);
  }
}

/** Shows the gallery from its start with the chosen label filter. */
function filterGallery() {
  gallerySeq++;
  galleryOffset = 0;
  $("gallery").replaceChildren();
  loadGallery();
}

/** The first image file of a drop or a paste, or null. */
function imageFileOf(transfer) {
  for (const file of transfer ? transfer.files : []) if (file.type.startsWith("image/")) return file;
  return null;
}

/** Searches with a dropped or pasted image, or says why it cannot. */
function searchTransferred(transfer) {
  const file = imageFileOf(transfer);
  if (!file) {
    clearQuery();
    return showError("That is not an image file: drop or paste a PNG, JPEG, WebP, GIF or TIFF image.");
  }
  runQuery({ file });
}

function repeatQuery() {
  if (lastQuery) runQuery(lastQuery);
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  searchUpload();
});
$("file").addEventListener("change", searchUpload);
$("label").addEventListener("change", repeatQuery);
$("k").addEventListener("change", repeatQuery);
$("more").addEventListener("click", loadGallery);
$("gallery-label").addEventListener("change", filterGallery);
const dropZone = $("drop-zone");
dropZone.addEventListener("dragover", (event) => {
  event.preventDefault();
  dropZone.classList.add("dragging");
});
dropZone.addEventListener("dragleave", () => dropZone.classList.remove("dragging"));
dropZone.addEventListener("drop", (event) => {
  event.preventDefault();
  dropZone.classList.remove("dragging");
  searchTransferred(event.dataTransfer);
});
document.addEventListener("paste", (event) => {
  if (!imageFileOf(event.clipboardData)) return;
  event.preventDefault();
  searchTransferred(event.clipboardData);
});
loadLabels();
loadGallery();
</script>
</body>
</html>
`;
}
