// Sparkscope page behaviour: sortable tables and selects that submit their form.
// Loaded as a static file because the Content-Security-Policy forbids inline scripts.
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? -Infinity : "";
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    if (numeric) {
      var n = parseFloat(raw);
      return isNaN(n) ? -Infinity : n;
    }
    return raw.toLowerCase();
  }

  function sortTable(table, index, numeric, th) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      if (x < y) return ascending ? -1 : 1;
      if (x > y) return ascending ? 1 : -1;
      return 0;
    });
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) { fragment.appendChild(row); });
    body.appendChild(fragment);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.classList.add("sortable-th");
      th.setAttribute("title", "click to sort");
      th.addEventListener("click", function () {
        sortTable(table, index, th.getAttribute("data-type") === "num", th);
      });
    });
  });

  // Copy buttons of the --conf blocks: the block's text to the clipboard (selected as a fallback).
  document.querySelectorAll("button.copy-btn[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) return;
      var text = source.textContent;
      var done = function () { button.textContent = "Copied"; button.setAttribute("data-copied", "1"); };
      var select = function () {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected: press Ctrl+C";
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, select);
      } else {
        select();
      }
    });
  });

  // Search: empty fields stay out of the URL (and the severity mode without a severity).
  var searchForm = document.getElementById("search-form");
  if (searchForm) {
    searchForm.addEventListener("submit", function () {
      var severity = searchForm.querySelector("[name=severity]");
      Array.prototype.forEach.call(searchForm.elements, function (el) {
        if (!el.name) return;
        var empty = el.value === "" || (el.name === "severity_mode" && severity && severity.value === "");
        if (empty) el.disabled = true;
      });
    });
    // Back to a page kept in the browser's cache: the fields work again.
    window.addEventListener("pageshow", function () {
      Array.prototype.forEach.call(searchForm.elements, function (el) { el.disabled = false; });
    });
  }

  document.querySelectorAll("select.autosubmit").forEach(function (select) {
    select.addEventListener("change", function () {
      if (select.form) select.form.submit();
    });
  });
})();
