"use strict";
// The report's only script: the variant browser. Texts are inserted with textContent, never
// parsed as markup, so nothing in the data can run.
(function () {
  var holder = document.getElementById("variants-data");
  var root = document.getElementById("browser-root");
  if (!holder || !root) { return; }
  var data = JSON.parse(holder.textContent);
  var PAGE = 20;
  var state = { p: "", s: "", e: "", page: 0 };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function fmt(v) {
    if (v === null || v === undefined) { return "–"; }
    var a = Math.abs(v);
    if (a !== 0 && (a < 0.001 || a >= 1e5)) { return v.toExponential(2); }
    return a >= 100 ? v.toFixed(1) : v.toFixed(3);
  }
  function options(select, values, all) {
    select.appendChild(new Option(all, ""));
    values.forEach(function (v) { select.appendChild(new Option(String(v), String(v))); });
  }
  function uniq(index) {
    var seen = {}, out = [];
    data.variants.forEach(function (v) {
      var key = String(v[index]);
      if (!seen[key]) { seen[key] = true; out.push(key); }
    });
    return out;
  }

  // word diff: longest common subsequence after trimming the common prefix and suffix
  function diff(a, b) {
    var start = 0, endA = a.length, endB = b.length;
    while (start < endA && start < endB && a[start] === b[start]) { start++; }
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    var n = endA - start, m = endB - start, ops = [];
    for (var i = 0; i < start; i++) { ops.push(["=", a[i]]); }
    if (n * m > 4000000) {  // too large to align: show the middles as replaced
      for (i = start; i < endA; i++) { ops.push(["-", a[i]]); }
      for (i = start; i < endB; i++) { ops.push(["+", b[i]]); }
    } else {
      var width = m + 1, table = new Uint32Array((n + 1) * (m + 1));
      for (i = n - 1; i >= 0; i--) {
        for (var j = m - 1; j >= 0; j--) {
          table[i * width + j] = a[start + i] === b[start + j] ? table[(i + 1) * width + j + 1] + 1
            : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && a[start + i] === b[start + j]) { ops.push(["=", a[start + i]]); i++; j++; }
        else if (j < m && (i === n || table[i * width + j + 1] >= table[(i + 1) * width + j])) { ops.push(["+", b[start + j]]); j++; }
        else { ops.push(["-", a[start + i]]); i++; }
      }
    }
    for (i = endA; i < a.length; i++) { ops.push(["=", a[i]]); }
    return ops;
  }
  function pane(title, ops, keep) {
    var box = el("div", "pane");
    box.appendChild(el("h4", null, title));
    ops.forEach(function (op, k) {
      if (op[0] !== "=" && op[0] !== keep) { return; }
      var tag = op[0] === "=" ? "span" : (op[0] === "-" ? "del" : "ins");
      if (k > 0) { box.appendChild(document.createTextNode(" ")); }
      box.appendChild(el(tag, null, op[1]));
    });
    return box;
  }

  var controls = el("div", "controls");
  var selP = el("select"); selP.id = "filter-perturbation"; options(selP, uniq(2), "every perturbation");
  var selS = el("select"); selS.id = "filter-severity"; options(selS, uniq(3), "every severity");
  var inputE = el("input"); inputE.id = "filter-example"; inputE.placeholder = "example id contains…";
  inputE.setAttribute("list", "example-ids");
  var ids = el("datalist"); ids.id = "example-ids";
  Object.keys(data.examples).slice(0, 2000).forEach(function (id) { ids.appendChild(new Option(id)); });
  var count = el("span", "note"); count.id = "browser-count";
  var pager = el("span", "pager");
  var prev = el("button", null, "‹ previous"), next = el("button", null, "next ›");
  var where = el("span", "note");
  pager.appendChild(prev); pager.appendChild(where); pager.appendChild(next);
  [["perturbation ", selP], ["severity ", selS], ["example ", inputE]].forEach(function (pair) {
    var label = el("label", null, pair[0]); label.appendChild(pair[1]); controls.appendChild(label);
  });
  controls.appendChild(ids); controls.appendChild(count); controls.appendChild(pager);
  var list = el("div"); list.id = "browser-list";
  root.appendChild(controls); root.appendChild(list);

  function matches() {
    var e = state.e.toLowerCase();
    return data.variants.filter(function (v) {
      return (!state.p || v[2] === state.p) && (!state.s || String(v[3]) === state.s) &&
        (!e || String(v[1]).toLowerCase().indexOf(e) >= 0);
    });
  }
  function card(v, index) {
    var box = el("div", "card");
    box.setAttribute("data-perturbation", v[2]);
    box.setAttribute("data-severity", String(v[3]));
    box.setAttribute("data-example", v[1]);
    box.appendChild(el("h3", "head", v[2] + " · severity " + v[3] + " · seed " + v[4] +
      " · noise ratio " + fmt(v[5]) + " · example " + v[1] + " · variant " + v[0]));
    var example = data.examples[v[1]];
    var panes = el("div", "panes");
    if (example && example.text !== undefined) {
      var ops = diff(example.text.split(/\s+/).filter(Boolean), v[6].split(/\s+/).filter(Boolean));
      panes.appendChild(pane("original", ops, "-"));
      panes.appendChild(pane("variant", ops, "+"));
    } else {
      var plain = el("div", "pane"); plain.appendChild(el("h4", null, "variant")); plain.appendChild(el("span", null, v[6]));
      panes.appendChild(plain);
      var changes = el("div", "pane"); changes.appendChild(el("h4", null, "changes")); changes.appendChild(el("span", null, v[8] || ""));
      panes.appendChild(changes);
    }
    box.appendChild(panes);
    if (data.columns.length) {
      panes.className = "panes with-scores";
      var table = el("table"), head = el("tr");
      ["evaluator / aspect", "original", "variant", "change", "note"].forEach(function (h) { head.appendChild(el("th", null, h)); });
      table.appendChild(head);
      var notes = data.notes[String(v[0])] || {};
      var base = (example && example.scores) || [];
      data.columns.forEach(function (col, c) {
        var row = el("tr"), a = base[c], b = v[7][c];
        var name = el("td", "l"); name.appendChild(el("span", null, col.label)); name.title = col.name;
        row.appendChild(name);
        row.appendChild(el("td", null, fmt(a)));
        row.appendChild(el("td", null, fmt(b)));
        var delta = (a === null || a === undefined || b === null || b === undefined) ? null : b - a;
        var cell = el("td", null, delta === null ? "–" : (delta > 0 ? "+" : "") + fmt(delta));
        if (delta !== null && delta !== 0) {
          var worse = col.higher ? delta < 0 : delta > 0;
          cell.className = worse ? "ok" : "bad";
          cell.title = worse ? "scored worse: the damage was noticed" : "scored better than the original";
        }
        row.appendChild(cell);
        row.appendChild(el("td", "l small", notes[String(c)] || ""));
        table.appendChild(row);
      });
      panes.appendChild(table);
    }
    return box;
  }
  function render() {
    var found = matches();
    var pages = Math.max(1, Math.ceil(found.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    while (list.firstChild) { list.removeChild(list.firstChild); }
    found.slice(state.page * PAGE, state.page * PAGE + PAGE).forEach(function (v, k) {
      list.appendChild(card(v, state.page * PAGE + k));
    });
    count.textContent = found.length + " matching of " + data.variants.length + " in this page" +
      (data.total > data.variants.length ? " (a stratified sample of the run's " + data.total +
        " variants; evalstress export writes them all)" : "");
    where.textContent = " page " + (state.page + 1) + " of " + pages + " ";
    prev.disabled = state.page === 0; next.disabled = state.page >= pages - 1;
  }
  selP.addEventListener("change", function () { state.p = selP.value; state.page = 0; render(); });
  selS.addEventListener("change", function () { state.s = selS.value; state.page = 0; render(); });
  inputE.addEventListener("input", function () { state.e = inputE.value.trim(); state.page = 0; render(); });
  prev.addEventListener("click", function () { state.page--; render(); });
  next.addEventListener("click", function () { state.page++; render(); });
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[data-perturbation]") : null;
    if (!link) { return; }
    var wanted = link.getAttribute("data-perturbation");
    var known = Array.prototype.some.call(selP.options, function (o) { return o.value === wanted; });
    selP.value = known ? wanted : ""; state.p = selP.value; state.s = ""; selS.value = "";
    state.page = 0; render();
  });
  render();
})();
