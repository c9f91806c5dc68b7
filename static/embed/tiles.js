// How a tile's rows are drawn: a table, a KPI, a pivot table or a Vega-Lite chart, exactly as the server composed the
// tile (embedadmin/dashboards/tiles.py: its columns, a KPI's measure, a pivot's rows, columns, values and totals, a
// chart's render-ready spec; docs/dashboards.md "Tiles"). The one drawing of a tile, for the embedded dashboard
// (dashboard.js) and the panel's report builder preview (static/panel/builder.js): no rule of its own for columns,
// titles or formats; every value is formatted by EmbedKit's Formatter. Loaded after common.js; adds EmbedKit.Tiles.
// Runs under `script-src 'self'; style-src 'self'` (no eval, no inline style).
(function () {
  "use strict";
  var K = window.EmbedKit;
  var h = K.h;

  var ROW_LIMIT = 2000; // a table or a pivot shows at most this many rows (and says so)
  var EMPTY = "No data for this selection";

  /** Rows for Vega: a number column's values as numbers (Cube sends them as strings), everything else as it is. */
  function chartRows(tile, rows) {
    var numeric = (tile.columns || []).filter(function (column) {
      return column.type === "number";
    });
    return rows.map(function (row) {
      var copy = Object.assign({}, row);
      numeric.forEach(function (column) {
        copy[column.key] = K.numeric(copy[column.key]);
      });
      return copy;
    });
  }

  function cell(tag, column, value, formatter) {
    return h(tag + (column.type === "number" ? ".num" : ""), formatter.value(value, column));
  }

  function note(body, shown, total) {
    if (total > shown) body.appendChild(h("p.tile-note", "First " + shown + " of " + total + " rows"));
  }

  /** A table: exactly the tile's columns, with their titles, each cell formatted by its column. */
  function table(body, tile, rows, formatter) {
    var columns = tile.columns || [];
    var headRow = h("tr");
    columns.forEach(function (column) {
      headRow.appendChild(h("th" + (column.type === "number" ? ".num" : ""), { scope: "col" }, column.title));
    });
    var tbody = h("tbody");
    var limit = Math.min(rows.length, ROW_LIMIT);
    for (var i = 0; i < limit; i += 1) {
      var tr = h("tr");
      for (var c = 0; c < columns.length; c += 1) tr.appendChild(cell("td", columns[c], rows[i][columns[c].key], formatter));
      tbody.appendChild(tr);
    }
    body.appendChild(h("div.table-scroll", { tabindex: "0" }, h("table.data-table", h("thead", headRow), tbody)));
    note(body, limit, rows.length);
  }

  /** A KPI: the first row's value of the tile's measure; `label`: the measure's title under it. */
  function kpi(body, tile, rows, formatter, label) {
    var measure = (tile.spec || {}).measure || { key: "", title: "", type: "number" };
    var value = (rows[0] || {})[measure.key];
    body.appendChild(
      h(
        "div.kpi",
        h("p.kpi-value", { title: value === undefined || value === null ? "" : String(value) }, formatter.value(value, measure)),
        label ? h("p.kpi-label", measure.title) : null
      )
    );
  }

  function samePrefix(a, b, level) {
    for (var i = 0; i <= level; i += 1) if (!b || i >= b.length || a[i] !== b[i]) return false;
    return true;
  }

  function compareValues(a, b, column) {
    if (a === b) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    if (column && column.type === "number") return Number(a) - Number(b);
    return String(a) < String(b) ? -1 : 1;
  }

  /** A pivot table: a row per distinct value of the row columns (in the query's order), a column per distinct value
   * of the column columns (ascending) and value, and the totals the server's queries answered (`totals`: their rows,
   * by name: rows, columns, grand). */
  function pivot(body, tile, rows, totals, formatter) {
    var spec = tile.spec || {};
    var rowColumns = spec.rows || [];
    var colColumns = spec.columns || [];
    var values = spec.values || [];
    function tuple(row, columns) {
      return columns.map(function (column) {
        var value = row[column.key];
        return value === undefined ? null : value;
      });
    }
    function index(found, columns) {
      var byKey = {};
      var order = [];
      found.forEach(function (row) {
        var key = JSON.stringify(tuple(row, columns));
        if (!byKey[key]) {
          byKey[key] = row;
          order.push(key);
        }
      });
      return { rows: byKey, order: order };
    }
    var byRow = index(rows, rowColumns);
    var byColumn = index(rows, colColumns);
    var colKeys = byColumn.order.slice().sort(function (a, b) {
      var x = JSON.parse(a);
      var y = JSON.parse(b);
      for (var i = 0; i < x.length; i += 1) {
        var order = compareValues(x[i], y[i], colColumns[i]);
        if (order) return order;
      }
      return 0;
    });
    var cells = {};
    rows.forEach(function (row) {
      cells[JSON.stringify(tuple(row, rowColumns)) + "|" + JSON.stringify(tuple(row, colColumns))] = row;
    });
    totals = totals || {};
    var rowTotals = totals.rows ? index(totals.rows, rowColumns).rows : null;
    var colTotals = totals.columns ? index(totals.columns, colColumns).rows : null;
    var grand = totals.grand ? totals.grand[0] || null : null;
    var headerColumns = Math.max(1, rowColumns.length);
    var head = h("thead");
    colColumns.forEach(function (column, level) {
      var tr = h("tr", h("th.pivot-dimension", { scope: "row", colspan: headerColumns }, column.title));
      for (var i = 0; i < colKeys.length; ) {
        var start = JSON.parse(colKeys[i]);
        var span = 1;
        while (i + span < colKeys.length && samePrefix(start, JSON.parse(colKeys[i + span]), level)) span += 1;
        tr.appendChild(h("th.num", { scope: "colgroup", colspan: span * values.length }, formatter.value(start[level], column)));
        i += span;
      }
      if (rowTotals && level === 0) tr.appendChild(h("th.num.pivot-total", { scope: "colgroup", rowspan: colColumns.length, colspan: values.length }, "Total"));
      head.appendChild(tr);
    });
    var titles = h("tr");
    if (rowColumns.length) {
      rowColumns.forEach(function (column) {
        titles.appendChild(h("th", { scope: "col" }, column.title));
      });
    } else titles.appendChild(h("th", { scope: "col" }, ""));
    var groups = colColumns.length ? colKeys.length + (rowTotals ? 1 : 0) : 1;
    if (values.length === 1 && colColumns.length) {
      titles.appendChild(h("th.pivot-values", { scope: "colgroup", colspan: groups }, values[0].title));
    } else {
      for (var g = 0; g < groups; g += 1) {
        values.forEach(function (value) {
          titles.appendChild(h("th.num", { scope: "col" }, value.title));
        });
      }
    }
    head.appendChild(titles);
    var tbody = h("tbody");
    var shownKeys = byRow.order.slice(0, ROW_LIMIT);
    var previous = [];
    shownKeys.forEach(function (rowKey) {
      var labels = JSON.parse(rowKey);
      var tr = h("tr");
      if (rowColumns.length) {
        rowColumns.forEach(function (column, level) {
          // A value that repeats the row above's at every level up to here is left blank: the groups read as groups.
          var repeated = samePrefix(labels, previous, level);
          tr.appendChild(h("th", { scope: "row" }, repeated ? "" : formatter.value(labels[level], column)));
        });
      } else tr.appendChild(h("th", { scope: "row" }, ""));
      previous = labels;
      var keys = colColumns.length ? colKeys : [JSON.stringify([])];
      keys.forEach(function (colKey) {
        var row = cells[rowKey + "|" + colKey] || {};
        values.forEach(function (value) {
          tr.appendChild(cell("td", value, row[value.key], formatter));
        });
      });
      if (rowTotals) {
        values.forEach(function (value) {
          tr.appendChild(cell("td.pivot-total", value, (rowTotals[rowKey] || {})[value.key], formatter));
        });
      }
      tbody.appendChild(tr);
    });
    var element = h("table.data-table.pivot-table", head, tbody);
    if (colTotals || (grand && !colColumns.length)) {
      var foot = h("tr", h("th", { scope: "row", colspan: headerColumns }, "Total"));
      (colColumns.length ? colKeys : []).forEach(function (colKey) {
        values.forEach(function (value) {
          foot.appendChild(cell("td", value, colTotals ? (colTotals[colKey] || {})[value.key] : null, formatter));
        });
      });
      if (grand && (rowTotals || !colColumns.length)) {
        values.forEach(function (value) {
          foot.appendChild(cell("td.pivot-total", value, grand[value.key], formatter));
        });
      }
      element.appendChild(h("tfoot", foot));
    }
    body.appendChild(h("div.table-scroll", { tabindex: "0" }, element));
    note(body, shownKeys.length, byRow.order.length);
  }

  /** Draw a tile's rows into `body` (emptied first). `tile`: the server's composition ({kind, columns, spec});
   * `rows`: its /v1/load rows; `options`: {formatter: () => Formatter (the current one: a chart formats its values
   * when it draws them), totals?: a pivot's total rows by name, kpiLabel?: whether a KPI names its measure}.
   * Resolves with the chart's vegaEmbed result ({view}) for a chart, else null. */
  function draw(body, tile, rows, options) {
    var formatter = options.formatter;
    K.clear(body);
    if (tile.kind === "kpi") {
      kpi(body, tile, rows, formatter(), !!options.kpiLabel);
      return Promise.resolve(null);
    }
    if (!rows.length) {
      body.appendChild(h("p.tile-empty", EMPTY));
      return Promise.resolve(null);
    }
    if (tile.kind === "table") table(body, tile, rows, formatter());
    else if (tile.kind === "pivot") pivot(body, tile, rows, options.totals, formatter());
    else {
      var target = h("div.chart");
      body.appendChild(target);
      return K.embedVega(target, tile.spec || {}, { table: chartRows(tile, rows) }, formatter);
    }
    return Promise.resolve(null);
  }

  K.Tiles = { draw: draw, chartRows: chartRows, ROW_LIMIT: ROW_LIMIT };
})();
