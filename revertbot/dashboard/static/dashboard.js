// revertbot dashboard: sorting, filters and search for the reverts table.
// The table is complete without this script; it only hides rows and reorders them.
(function () {
  "use strict";

  var table = document.getElementById("reverts");
  var controls = document.getElementById("table-controls");
  var status = document.getElementById("table-status");
  var dataNode = document.getElementById("search-data");
  if (!table || !controls || !status || !dataNode) {
    return;
  }
  var haystack = JSON.parse(dataNode.textContent || "{}");
  var tbody = table.tBodies[0];
  var rows = Array.prototype.slice.call(tbody.rows);
  var total = rows.length;
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var filters = Array.prototype.slice.call(controls.querySelectorAll("select[data-filter]"));
  var search = document.getElementById("filter-q");
  var from = document.getElementById("filter-from");
  var to = document.getElementById("filter-to");

  function modulesOf(row) {
    try {
      return JSON.parse(row.getAttribute("data-modules") || "[]");
    } catch (err) {
      return [];
    }
  }

  controls.hidden = false;
  controls.addEventListener("submit", function (event) {
    event.preventDefault();
  });

  function matches(row, terms) {
    for (var i = 0; i < filters.length; i++) {
      var want = filters[i].value;
      if (!want) {
        continue;
      }
      var key = filters[i].getAttribute("data-filter");
      if (key === "module") {
        if (modulesOf(row).indexOf(want) < 0) {
          return false;
        }
      } else if (row.getAttribute("data-" + key) !== want) {
        return false;
      }
    }
    var rowDay = row.getAttribute("data-day") || "";
    if (from.value && (!rowDay || rowDay < from.value)) {
      return false;
    }
    if (to.value && (!rowDay || rowDay > to.value)) {
      return false;
    }
    if (terms.length) {
      var text = haystack[row.id] || "";
      for (var t = 0; t < terms.length; t++) {
        if (text.indexOf(terms[t]) < 0) {
          return false;
        }
      }
    }
    return true;
  }

  function apply() {
    var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var ok = matches(row, terms);
      row.hidden = !ok;
      if (ok) {
        shown += 1;
      }
    });
    status.textContent = "Showing " + shown + " of " + total + " reverts and relands.";
    status.setAttribute("data-shown", String(shown));
  }

  function cellValue(row, index, numeric) {
    var raw = row.cells[index].getAttribute("data-value") || "";
    return numeric ? parseFloat(raw) || 0 : raw;
  }

  function sortBy(index) {
    var th = headers[index];
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    var dir = current === "ascending" ? "descending" : current === "descending" ? "ascending" : numeric ? "descending" : "ascending";
    headers.forEach(function (h) {
      h.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", dir);
    var sign = dir === "ascending" ? 1 : -1;
    var order = rows.map(function (row, i) {
      return { row: row, i: i, v: cellValue(row, index, numeric) };
    });
    order.sort(function (a, b) {
      if (a.v < b.v) {
        return -sign;
      }
      if (a.v > b.v) {
        return sign;
      }
      return a.i - b.i;
    });
    rows = order.map(function (o) {
      return o.row;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (row) {
      frag.appendChild(row);
    });
    tbody.appendChild(frag);
  }

  headers.forEach(function (th, index) {
    var label = th.querySelector(".th-label");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.textContent = label ? label.textContent : th.textContent;
    button.setAttribute("aria-label", "sort by " + button.textContent);
    th.textContent = "";
    th.appendChild(button);
    button.addEventListener("click", function () {
      sortBy(index);
    });
  });

  filters.forEach(function (select) {
    select.addEventListener("change", apply);
  });
  [search, from, to].forEach(function (input) {
    input.addEventListener("input", apply);
  });
  document.getElementById("filter-reset").addEventListener("click", function () {
    filters.forEach(function (select) {
      select.value = "";
    });
    search.value = "";
    from.value = "";
    to.value = "";
    apply();
  });
  apply();
})();
