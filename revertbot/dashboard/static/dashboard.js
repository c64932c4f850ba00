// revertbot dashboard: the reverts table, sorted, filtered and searched a page at a time.
// The HTML holds the first page of rows (readable without this script; all.html has every row).
// Every row is also given as compact columns and search text: in the page (#table-data,
// #search-data) for a small history, else in the script named by the table's data-rows-src,
// loaded after the page is shown. From them this script renders the matching rows a page at a
// time, so 10,000 rows load and filter as fast as 100. Data is only ever inserted as text
// (textContent, attributes), never as HTML.
(function () {
  "use strict";

  var marks = window.performance && performance.mark ? performance : { mark: function () {} };
  marks.mark("revertbot-table-start");
  var table = document.getElementById("reverts");
  var controls = document.getElementById("table-controls");
  var status = document.getElementById("table-status");
  if (!table || !controls || !status) {
    return;
  }
  var dataNode = document.getElementById("table-data");
  var searchNode = document.getElementById("search-data");
  var src = table.getAttribute("data-rows-src");
  if (dataNode && searchNode) {
    start(JSON.parse(dataNode.textContent || "{}"), JSON.parse(searchNode.textContent || "{}"));
  } else if (src) {
    var loader = document.createElement("script");
    loader.src = src;
    loader.addEventListener("load", function () {
      marks.mark("revertbot-table-data");
      var loaded = window.revertbotTable;
      window.revertbotTable = undefined;
      if (loaded && loaded.table && loaded.search) {
        start(loaded.table, loaded.search);
      }
    });
    document.body.appendChild(loader);
  }

  function start(data, haystack) {
    var cols = data.columns;
    var values = data.values;
    var total = data.rows;
    var pageRows = data.page_rows || 100;
    var tbody = table.tBodies[0];
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var filters = Array.prototype.slice.call(controls.querySelectorAll("select[data-filter]"));
    var search = document.getElementById("filter-q");
    var from = document.getElementById("filter-from");
    var to = document.getElementById("filter-to");
    var RISK_RANK = { high: 3, medium: 2, low: 1 };

    // What the search looks in: the row's columns and, from #search-data, its modules, changed
    // files and originals; lower case, one string per row.
    var text = new Array(total);
    for (var t = 0; t < total; t++) {
      var pr = cols.pr[t];
      text[t] = [cols.sha[t], cols.subject[t], values.author[cols.author[t]], values.kind[cols.kind[t]],
        values.purity[cols.purity[t]], values.risk[cols.risk[t]], values.gpu[cols.gpu[t]],
        values.repo[cols.repo[t]], pr ? "#" + pr : "", values.reason[cols.reason[t]],
        haystack["row-" + t] || ""].join(" ").toLowerCase();
    }
    haystack = null;

    // Indexes: for each filter, the rows (in table order) that have each value.
    var index = {};
    var lookup = {};
    filters.forEach(function (select) {
      var key = select.getAttribute("data-filter");
      var names = values[key] || [];
      var lists = names.map(function () {
        return [];
      });
      var column = key === "module" ? cols.modules : cols[key];
      for (var i = 0; i < total; i++) {
        if (key === "module") {
          var mods = column[i];
          for (var m = 0; m < mods.length; m++) {
            lists[mods[m]].push(i);
          }
        } else {
          lists[column[i]].push(i);
        }
      }
      var byName = {};
      names.forEach(function (name, code) {
        byName[name] = code;
      });
      index[key] = lists;
      lookup[key] = byName;
    });

    var order = [];
    for (var o = 0; o < total; o++) {
      order.push(o);
    }
    var matched = order.slice();
    var page = 0;
    var rowCache = [];

    // ------------------------------------------------------------------ rendering one row

    function cut(value, limit) {
      if (value.length <= limit) {
        return value;
      }
      var chars = Array.from(value);
      return chars.length <= limit ? value : chars.slice(0, limit - 1).join("") + "…";
    }

    function el(tag, className, content) {
      var node = document.createElement(tag);
      if (className) {
        node.className = className;
      }
      if (content !== undefined) {
        node.textContent = content;
      }
      return node;
    }

    function badge(kind, value) {
      return el("span", "badge " + kind + "-" + value.toLowerCase().replace(/[^a-z0-9-]/g, "-"), value);
    }

    function cell(tr, sortValue, content, className) {
      var td = el("td", className);
      td.setAttribute("data-value", String(sortValue));
      if (typeof content === "string") {
        td.textContent = content;
      } else {
        for (var i = 0; i < content.length; i++) {
          td.appendChild(typeof content[i] === "string" ? document.createTextNode(content[i]) : content[i]);
        }
      }
      tr.appendChild(td);
    }

    function pageName(i) {
      var hex = cols.sha[i].toLowerCase().replace(/[^0-9a-f]/g, "").slice(0, 12) || "x";
      return hex + "-" + data.repo_page[cols.repo[i]] + ".html";
    }

    function makeRow(i) {
      var repo = values.repo[cols.repo[i]];
      var risk = values.risk[cols.risk[i]];
      var purity = values.purity[cols.purity[i]];
      var gpu = values.gpu[cols.gpu[i]];
      var kind = values.kind[cols.kind[i]];
      var author = values.author[cols.author[i]];
      var mods = cols.modules[i].map(function (code) {
        return values.module[code];
      });
      var tr = document.createElement("tr");
      tr.id = "row-" + i;
      var attrs = {
        date: String(cols.date[i]), day: values.day[cols.day[i]], risk: risk, purity: purity, kind: kind, gpu: gpu,
        author: author, modules: JSON.stringify(mods), repo: repo, reason: values.reason[cols.reason[i]]
      };
      Object.keys(attrs).forEach(function (key) {
        tr.setAttribute("data-" + key, attrs[key]);
      });
      cell(tr, cols.date[i], values.day[cols.day[i]], "nowrap");
      cell(tr, repo.toLowerCase(), cut(repo, 80));
      var sha = el("a");
      sha.href = "reverts/" + pageName(i);
      sha.appendChild(el("code", "sha", cols.sha[i].slice(0, 10)));
      cell(tr, cols.sha[i], [sha]);
      var pr = cols.pr[i];
      var base = data.repo_url[cols.repo[i]];
      var prContent = "–";
      if (pr > 0) {
        var number = el("span", "nowrap", "#" + pr);
        if (base) {
          var link = el("a", "ext");
          link.href = base + "/pull/" + pr;
          link.rel = "noopener noreferrer";
          link.appendChild(number);
          prContent = [link];
        } else {
          prContent = [number];
        }
      }
      cell(tr, pr, prContent);
      var subject = [cols.subject[i]];
      if (cols.relanded[i]) {
        var note = badge("relanded", "re-landed");
        note.className = "badge relanded";
        note.title = "re-landed later";
        subject.push(" ", note);
      }
      cell(tr, cols.subject[i].toLowerCase(), subject);
      cell(tr, kind, kind.replace(/[_-]/g, " ").trim());
      cell(tr, purity, [badge("purity", purity)]);
      cell(tr, RISK_RANK[risk] || 0, [badge("risk", risk)]);
      var shown = mods.slice(0, 3).map(function (m) {
        return cut(m, 60);
      }).join(", ") + (mods.length > 3 ? " +" + (mods.length - 3) : "");
      cell(tr, mods.length ? mods[0] : "", shown);
      cell(tr, author.toLowerCase(), cut(author, 60));
      cell(tr, gpu, [badge("gpu", gpu)]);
      cell(tr, cols.ttr[i], values.ttr_text[cols.ttr_text[i]]);
      return tr;
    }

    // ------------------------------------------------------------------ the page of rows

    var pager = el("nav", "pager");
    pager.id = "table-pager";
    pager.setAttribute("aria-label", "Pages of the table");
    var prev = el("button", "", "← previous");
    prev.type = "button";
    prev.id = "page-prev";
    var info = el("span", "page-info");
    info.id = "page-info";
    var next = el("button", "", "next →");
    next.type = "button";
    next.id = "page-next";
    pager.appendChild(prev);
    pager.appendChild(info);
    pager.appendChild(next);
    table.parentNode.parentNode.insertBefore(pager, table.parentNode.nextSibling);

    function render() {
      var pages = Math.max(1, Math.ceil(matched.length / pageRows));
      page = Math.min(page, pages - 1);
      var start = page * pageRows;
      var end = Math.min(matched.length, start + pageRows);
      var frag = document.createDocumentFragment();
      for (var k = start; k < end; k++) {
        var i = matched[k];
        frag.appendChild(rowCache[i] || (rowCache[i] = makeRow(i)));
      }
      tbody.textContent = "";
      tbody.appendChild(frag);
      status.textContent = "Showing " + matched.length + " of " + total + " reverts and relands.";
      status.setAttribute("data-shown", String(matched.length));
      pager.hidden = pages < 2;
      info.textContent = "rows " + (end ? start + 1 : 0) + "–" + end + " of " + matched.length + ", page " +
        (page + 1) + " of " + pages;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    }

    prev.addEventListener("click", function () {
      page = Math.max(0, page - 1);
      render();
    });
    next.addEventListener("click", function () {
      page += 1;
      render();
    });

    // ------------------------------------------------------------------ filters

    var mark = new Uint8Array(total);

    function apply() {
      var wanted = [];
      var none = false;
      filters.forEach(function (select) {
        if (!select.value) {
          return;
        }
        var key = select.getAttribute("data-filter");
        var code = lookup[key][select.value];
        if (code === undefined) {
          none = true;
        } else {
          wanted.push({ key: key, code: code, rows: index[key][code] });
        }
      });
      var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      var lo = from.value;
      var hi = to.value;
      var dayOk = null;
      if (lo || hi) {
        dayOk = values.day.map(function (d) {
          return !!d && !(lo && d < lo) && !(hi && d > hi);
        });
      }
      mark.fill(0);
      var count = 0;
      if (!none) {
        // Start from the shortest index list of the chosen values; check the rest row by row.
        wanted.sort(function (a, b) {
          return a.rows.length - b.rows.length;
        });
        var candidates = wanted.length ? wanted[0].rows : null;
        var n = candidates ? candidates.length : total;
        for (var c = 0; c < n; c++) {
          var i = candidates ? candidates[c] : c;
          var ok = true;
          for (var w = 1; ok && w < wanted.length; w++) {
            var f = wanted[w];
            ok = f.key === "module" ? cols.modules[i].indexOf(f.code) >= 0 : cols[f.key][i] === f.code;
          }
          if (ok && dayOk) {
            ok = dayOk[cols.day[i]];
          }
          for (var s = 0; ok && s < terms.length; s++) {
            ok = text[i].indexOf(terms[s]) >= 0;
          }
          if (ok) {
            mark[i] = 1;
            count += 1;
          }
        }
      }
      collect(count);
      page = 0;
      render();
    }

    function collect(count) {
      matched = new Array(count);
      var k = 0;
      for (var j = 0; j < total; j++) {
        if (mark[order[j]]) {
          matched[k++] = order[j];
        }
      }
    }

    // ------------------------------------------------------------------ sorting

    function sortKeys(key) {
      var keys = new Array(total);
      for (var i = 0; i < total; i++) {
        switch (key) {
          case "repo": keys[i] = values.repo[cols.repo[i]].toLowerCase(); break;
          case "subject": keys[i] = cols.subject[i].toLowerCase(); break;
          case "risk": keys[i] = RISK_RANK[values.risk[cols.risk[i]]] || 0; break;
          case "modules": keys[i] = cols.modules[i].length ? values.module[cols.modules[i][0]] : ""; break;
          case "author": keys[i] = values.author[cols.author[i]].toLowerCase(); break;
          case "sha": case "pr": case "date": case "ttr": keys[i] = cols[key][i]; break;
          default: keys[i] = values[key][cols[key][i]];
        }
      }
      return keys;
    }

    function sortBy(th) {
      var numeric = th.getAttribute("data-type") === "num";
      var current = th.getAttribute("aria-sort");
      var dir = current === "ascending" ? "descending" : current === "descending" ? "ascending" : numeric ? "descending" : "ascending";
      headers.forEach(function (h) {
        h.setAttribute("aria-sort", "none");
      });
      th.setAttribute("aria-sort", dir);
      var sign = dir === "ascending" ? 1 : -1;
      var keys = sortKeys(th.getAttribute("data-key"));
      var position = new Int32Array(total);
      order.forEach(function (row, at) {
        position[row] = at;
      });
      order.sort(function (a, b) {
        var x = keys[a];
        var y = keys[b];
        if (x < y) {
          return -sign;
        }
        if (x > y) {
          return sign;
        }
        return position[a] - position[b];
      });
      collect(matched.length);
      page = 0;
      render();
    }

    headers.forEach(function (th) {
      var label = th.querySelector(".th-label");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = label ? label.textContent : th.textContent;
      button.setAttribute("aria-label", "sort by " + button.textContent);
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        sortBy(th);
      });
    });

    controls.hidden = false;
    controls.addEventListener("submit", function (event) {
      event.preventDefault();
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
    // Every row is in the table now: the note that the HTML holds only the newest ones goes.
    var more = document.getElementById("table-more");
    if (more) {
      more.hidden = true;
      document.getElementById("table-title").textContent = "All reverts and relands";
    }
    apply();
    marks.mark("revertbot-table-ready");  // the whole table can be filtered from here on
  }
})();
