// The embedded dashboard page (templates/embed/dashboard.html; contract: docs/dashboards.md).
// Reads the bootstrap, renders header, controls and tiles, loads every tile in parallel through the Core
// Data API with the viewer's token, talks to the host with postMessage. Shared code: common.js (EmbedKit),
// the chat panel: chat.js. Sections: state -> start -> header -> controls -> grid -> tiles -> renderers ->
// export -> view updates -> host actions.
(function () {
  "use strict";
  var K = window.EmbedKit;
  var h = K.h;

  // ---------------------------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------------------------

  var boot; // the bootstrap, without its token
  var session; // K.Session: the token in memory
  var host; // K.Host: the one host origin
  var formatter; // K.Formatter for the current locale and time zone
  var view; // the current view (state, filterUrlParameters, controls, widgets)
  var root; // #embed-root, the content whose size is reported
  var controlsBar;
  var actionsSlot; // where the chat launcher goes (top right: the frame may be as tall as its content)
  var grid;
  var tiles = {}; // widget id -> tile
  var valueCache = {}; // JSON of a valuesQuery -> Promise of values
  var cycle = 0; // the current load cycle; older cycles do not announce dashboard-loaded
  var loadedOnce = false;
  var sessionEndedReported = false;

  // ---------------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------------

  function start() {
    root = document.getElementById("embed-root");
    try {
      boot = K.readBootstrap();
    } catch (error) {
      showFatal("This dashboard could not start", error.message);
      return;
    }
    host = new K.Host(boot);
    session = new K.Session(boot, host);
    var settings = boot.settings || {};
    formatter = new K.Formatter(settings.locale, (boot.view && boot.view.state && boot.view.state.timezone) || settings.timezone);
    document.documentElement.lang = formatter.locale;
    K.applyTheme(boot.theme);
    K.applyTheme(settings.embedTheme);
    if (window.matchMedia) {
      var media = window.matchMedia("(prefers-color-scheme: dark)");
      if (media.addEventListener) media.addEventListener("change", rerenderCharts);
    }
    bindActions();
    host.observeSize(root);
    host.ready(boot, { publicId: boot.publicId });
    host.emit("view", { surface: "dashboard", path: window.location.pathname, publicId: boot.publicId, title: boot.title });
    view = boot.view || { state: {}, controls: [], widgets: [] };
    renderFrame();
    renderControls();
    buildGrid();
    loadTiles(Object.keys(tiles), 0);
    mountChat();
  }

  function showFatal(title, message) {
    K.clear(root);
    root.appendChild(K.errorBox(title, message));
  }

  // ---------------------------------------------------------------------------------------------
  // Header
  // ---------------------------------------------------------------------------------------------

  function renderFrame() {
    var flags = boot.flags || {};
    K.clear(root);
    // The top bar: the header (unless the flags hide it) and the actions slot (the chat launcher).
    var topbar = h("div.dash-topbar");
    if (flags.showDashboardHeader !== false && (flags.showDashboardTitle !== false || boot.description)) {
      var header = h("header.dash-header");
      if (flags.showDashboardTitle !== false) header.appendChild(h("h1.dash-title", boot.title || view.title || ""));
      if (boot.description) header.appendChild(h("p.dash-description", boot.description));
      topbar.appendChild(header);
    }
    actionsSlot = h("div.dash-actions");
    topbar.appendChild(actionsSlot);
    root.appendChild(topbar);
    controlsBar = h("div.dash-controls", { role: "toolbar", "aria-label": "Dashboard controls" });
    root.appendChild(controlsBar);
    grid = h("div.dash-grid");
    root.appendChild(grid);
  }

  // ---------------------------------------------------------------------------------------------
  // Controls: FILTER (values or a date range), TIME_GRAIN, FIELD
  // ---------------------------------------------------------------------------------------------

  var OPERATOR_LABELS = {
    equals: "is",
    notEquals: "is not",
    contains: "contains",
    notContains: "does not contain",
    startsWith: "starts with",
    endsWith: "ends with",
    gt: ">",
    gte: "≥",
    lt: "<",
    lte: "≤",
    set: "is set",
    notSet: "is not set",
  };

  function stateCopy(state) {
    state = state || {};
    return {
      filters: Object.assign({}, state.filters || {}),
      grains: Object.assign({}, state.grains || {}),
      fields: Object.assign({}, state.fields || {}),
      timezone: state.timezone || formatter.timezone,
    };
  }

  function renderControls() {
    K.clear(controlsBar);
    var controls = (view.controls || []).filter(function (control) {
      return control.visibility !== "hidden";
    });
    controlsBar.hidden = controls.length === 0;
    controls.forEach(function (control) {
      var disabled = control.visibility === "disabled";
      var body;
      if (control.type === "TIME_GRAIN") body = grainControl(control, disabled);
      else if (control.type === "FIELD") body = fieldControl(control, disabled);
      else if (control.dateRange) body = dateControl(control, disabled);
      else body = filterControl(control, disabled);
      var label = control.label;
      controlsBar.appendChild(
        h("div.control", { dataset: { control: control.id } }, h("span.control-label", { id: "label-" + control.id }, label), body)
      );
    });
  }

  function changeState(mutate) {
    stateChange({ mutate: mutate, filtersChanged: true });
  }

  function select(control, options, current, disabled, onChange) {
    var element = h("select.control-input", { "aria-labelledby": "label-" + control.id, disabled: disabled });
    options.forEach(function (option) {
      element.appendChild(h("option", { value: option[0], selected: option[0] === current }, option[1]));
    });
    element.value = current === undefined || current === null ? "" : current;
    element.addEventListener("change", function () {
      onChange(element.value);
    });
    return element;
  }

  function grainControl(control, disabled) {
    var state = view.state || {};
    var options = (control.grains || []).map(function (grain) {
      return [grain.name, grain.title];
    });
    var current = (state.grains || {})[control.id] || control.defaultGrain || (options[0] || [])[0];
    return select(control, options, current, disabled, function (value) {
      changeState(function (next) {
        next.grains[control.id] = value;
      });
    });
  }

  function fieldControl(control, disabled) {
    var state = view.state || {};
    var current = (state.fields || {})[control.id] || control.member;
    var options = (control.alternatives || []).map(function (alternative) {
      return [alternative.member, alternative.title];
    });
    return select(control, options, current, disabled, function (value) {
      changeState(function (next) {
        next.fields[control.id] = value;
      });
    });
  }

  function dateControl(control, disabled) {
    var filter = ((view.state || {}).filters || {})[control.id] || null;
    var values = (filter && filter.values) || [];
    var isoDate = /^\d{4}-\d{2}-\d{2}/;
    var preset = "";
    var from = "";
    var to = "";
    if (values.length === 2 && isoDate.test(values[0]) && isoDate.test(values[1])) {
      preset = "custom";
      from = String(values[0]).slice(0, 10);
      to = String(values[1]).slice(0, 10);
    } else if (values.length === 1 && typeof values[0] === "string") {
      preset = values[0].toLowerCase();
    }
    // The ranges offered are the server's (the semantic layer's date parser reads them); a range set otherwise (the
    // URL, set-filter, the dashboard's default) that the list does not have is shown as written.
    var presets = (control.presets || []).map(function (p) {
      return [p.value, p.label];
    });
    if (preset && !presets.some(function (p) { return p[0] === preset; })) presets.unshift([preset, preset]);
    presets = [["", "All time"]].concat(presets, [["custom", "Custom range"]]);
    var wrapper = h("div.control-daterange");
    var fromInput = h("input.control-input.control-date", { type: "date", value: from, "aria-label": "From", disabled: disabled });
    var toInput = h("input.control-input.control-date", { type: "date", value: to, "aria-label": "To", disabled: disabled });
    var range = h("span.control-dates", fromInput, h("span.control-dash", "–"), toInput);
    range.hidden = preset !== "custom";
    var presetSelect = select(control, presets, preset, disabled, function (value) {
      range.hidden = value !== "custom";
      if (value === "custom") {
        fromInput.focus();
        return;
      }
      changeState(function (next) {
        if (value) next.filters[control.id] = { operator: "inDateRange", values: [value] };
        else delete next.filters[control.id];
      });
    });
    function applyRange() {
      if (!fromInput.value || !toInput.value) return;
      var a = fromInput.value;
      var b = toInput.value;
      if (a > b) {
        var t = a;
        a = b;
        b = t;
      }
      changeState(function (next) {
        next.filters[control.id] = { operator: "inDateRange", values: [a, b] };
      });
    }
    fromInput.addEventListener("change", applyRange);
    toInput.addEventListener("change", applyRange);
    wrapper.appendChild(presetSelect);
    wrapper.appendChild(range);
    return wrapper;
  }

  function controlValues(control) {
    if (!control.valuesQuery) return Promise.resolve(control.values || []);
    var key = JSON.stringify(control.valuesQuery);
    if (!valueCache[key]) {
      valueCache[key] = K.coreLoad(session, control.valuesQuery).then(function (result) {
        var seen = {};
        var values = [];
        (result.data || []).forEach(function (row) {
          var value = row[control.member];
          if (value === null || value === undefined) return;
          var text = String(value);
          if (seen[text]) return;
          seen[text] = true;
          values.push(text);
        });
        return values;
      });
      valueCache[key].catch(function () {
        delete valueCache[key];
      });
    }
    return valueCache[key];
  }

  function filterControl(control, disabled) {
    var filter = ((view.state || {}).filters || {})[control.id] || null;
    var operators = (control.operators || ["equals"]).filter(function (op) {
      return op !== "inDateRange";
    });
    var operator = (filter && filter.operator) || operators[0] || "equals";
    var chosen = ((filter && filter.values) || []).map(String);
    var wrapper = h("div.control-filter");
    var operatorSelect = null;
    if (operators.length > 1) {
      operatorSelect = select(
        control,
        operators.map(function (op) {
          return [op, OPERATOR_LABELS[op] || op];
        }),
        operator,
        disabled,
        function (value) {
          operator = value;
          if (chosen.length) commit();
        }
      );
      operatorSelect.classList.add("control-operator");
      wrapper.appendChild(operatorSelect);
    }
    function commit() {
      changeState(function (next) {
        if (chosen.length) next.filters[control.id] = { operator: operator, values: chosen.slice() };
        else delete next.filters[control.id];
      });
    }
    var holder = h("span.control-values");
    wrapper.appendChild(holder);
    var loading = h("select.control-input", { disabled: true, "aria-labelledby": "label-" + control.id }, h("option", "Loading…"));
    holder.appendChild(loading);
    controlValues(control).then(
      function (values) {
        K.clear(holder);
        chosen.forEach(function (value) {
          if (values.indexOf(value) === -1) values = [value].concat(values);
        });
        holder.appendChild(control.multiple ? multiSelect(control, values, chosen, disabled, commit) : singleSelect(control, values, chosen, disabled, commit));
      },
      function (error) {
        K.clear(holder);
        holder.appendChild(h("span.control-error", { title: error.message }, K.isSessionEnded(error) ? "Session ended" : "Values unavailable"));
      }
    );
    return wrapper;
  }

  function singleSelect(control, values, chosen, disabled, commit) {
    var options = [["", "All"]].concat(
      values.map(function (value) {
        return [value, value];
      })
    );
    return select(control, options, chosen[0] || "", disabled, function (value) {
      chosen.length = 0;
      if (value) chosen.push(value);
      commit();
    });
  }

  /** A dropdown of checkboxes with a search field (details/summary: opens without script). */
  function multiSelect(control, values, chosen, disabled, commit) {
    var summaryText = h("span.multi-summary-text");
    function describe() {
      summaryText.textContent = !chosen.length ? "All" : chosen.length <= 2 ? chosen.join(", ") : chosen.length + " selected";
    }
    describe();
    var details = h("details.multi");
    var summary = h("summary.control-input.multi-summary", { "aria-labelledby": "label-" + control.id }, summaryText);
    if (disabled) {
      details.classList.add("disabled");
      summary.setAttribute("aria-disabled", "true");
      summary.addEventListener("click", function (event) {
        event.preventDefault();
      });
    }
    var search = h("input.multi-search", { type: "search", placeholder: "Search", "aria-label": "Search values" });
    var list = h("div.multi-list", { role: "group" });
    var dirty = false;
    var boxes = values.map(function (value) {
      var box = h("input", { type: "checkbox", value: value, checked: chosen.indexOf(value) !== -1 });
      box.addEventListener("change", function () {
        var at = chosen.indexOf(value);
        if (box.checked && at === -1) chosen.push(value);
        if (!box.checked && at !== -1) chosen.splice(at, 1);
        dirty = true;
        describe();
      });
      var row = h("label.multi-option", box, h("span", value));
      list.appendChild(row);
      return { value: value.toLowerCase(), row: row };
    });
    if (!values.length) list.appendChild(h("p.multi-empty", "No values"));
    search.addEventListener("input", function () {
      var needle = search.value.toLowerCase();
      boxes.forEach(function (b) {
        b.row.hidden = needle && b.value.indexOf(needle) === -1;
      });
    });
    var clearButton = h("button.link-button", { type: "button" }, "Clear");
    clearButton.addEventListener("click", function () {
      chosen.length = 0;
      list.querySelectorAll("input").forEach(function (box) {
        box.checked = false;
      });
      dirty = true;
      describe();
    });
    var apply = h("button.primary-button", { type: "button" }, "Apply");
    apply.addEventListener("click", function () {
      details.open = false;
    });
    details.addEventListener("toggle", function () {
      if (details.open) {
        search.focus();
        return;
      }
      if (dirty) {
        dirty = false;
        commit();
      }
    });
    document.addEventListener("click", function (event) {
      if (details.open && !details.contains(event.target)) details.open = false;
    });
    details.appendChild(summary);
    details.appendChild(h("div.multi-panel", search, list, h("div.multi-actions", clearButton, apply)));
    return details;
  }

  // ---------------------------------------------------------------------------------------------
  // Grid: layout.cols columns, rowHeight rows, empty rows (where the controls sat) collapsed
  // ---------------------------------------------------------------------------------------------

  function buildGrid() {
    Object.keys(tiles).forEach(function (id) {
      disposeTile(tiles[id]);
    });
    tiles = {};
    K.clear(grid);
    var layout = view.layout || boot.layout || {};
    var cols = Math.max(1, Number(layout.cols) || 12);
    var rowHeight = Math.max(24, Number(layout.rowHeight) || 80);
    grid.style.setProperty("--cols", cols);
    grid.style.setProperty("--row-height", rowHeight + "px");
    var widgets = (view.widgets || []).filter(function (widget) {
      return widget.type === "CHART" || widget.type === "TEXT";
    });
    var used = {};
    widgets.forEach(function (widget) {
      var p = widget.position || {};
      for (var r = p.y || 0; r < (p.y || 0) + (p.h || 1); r += 1) used[r] = true;
    });
    var rows = Object.keys(used)
      .map(Number)
      .sort(function (a, b) {
        return a - b;
      });
    var compact = {};
    rows.forEach(function (row, index) {
      compact[row] = index + 1;
    });
    widgets
      .slice()
      .sort(function (a, b) {
        var pa = a.position || {};
        var pb = b.position || {};
        return (pa.y || 0) - (pb.y || 0) || (pa.x || 0) - (pb.x || 0);
      })
      .forEach(function (widget) {
        var p = widget.position || {};
        var tile = createTile(widget);
        var el = tile.el;
        var x = Math.min(p.x || 0, cols - 1);
        el.style.setProperty("--col-start", x + 1);
        el.style.setProperty("--col-span", Math.min(p.w || cols, cols - x));
        el.style.setProperty("--row-start", compact[p.y || 0]);
        el.style.setProperty("--row-span", p.h || 1);
        grid.appendChild(el);
        tiles[widget.id] = tile;
      });
    if (!widgets.length) grid.appendChild(h("p.dash-empty", "This dashboard has no tiles yet."));
  }

  // ---------------------------------------------------------------------------------------------
  // Tiles: each with its own loading and error state
  // ---------------------------------------------------------------------------------------------

  function createTile(widget) {
    var tile = { widget: widget, result: null, vegaView: null, controller: null, status: "idle" };
    var kind = widget.type === "TEXT" ? "text" : widget.kind || "vega";
    tile.kind = kind;
    tile.el = h("section.tile.tile-" + kind, { dataset: { widgetId: widget.id }, "aria-busy": "false" });
    tile.head = h("header.tile-head");
    var showTitle = kind !== "text" || widget.title;
    if (showTitle) tile.head.appendChild(h("h2.tile-title", widget.title || ""));
    if (kind !== "text" && (boot.flags || {}).allowExport) tile.head.appendChild(exportMenu(tile));
    if (tile.head.childNodes.length) tile.el.appendChild(tile.head);
    tile.body = h("div.tile-body");
    tile.el.appendChild(tile.body);
    if (kind === "text") renderText(tile);
    return tile;
  }

  function disposeTile(tile) {
    if (tile.controller) tile.controller.abort();
    if (tile.sizeWatch) tile.sizeWatch.disconnect();
    if (tile.vegaView) tile.vegaView.finalize();
    tile.vegaView = null;
  }

  function setTileStatus(tile, status) {
    tile.status = status;
    tile.el.classList.toggle("is-loading", status === "loading");
    tile.el.classList.toggle("is-error", status === "error");
    tile.el.setAttribute("aria-busy", status === "loading" ? "true" : "false");
  }

  /** Load the given tiles in parallel; when every one has settled, announce dashboard-loaded. */
  function loadTiles(ids, startedAt) {
    cycle += 1;
    var mine = cycle;
    var jobs = ids
      .map(function (id) {
        return tiles[id];
      })
      .filter(function (tile) {
        return tile && tile.kind !== "text";
      })
      .map(loadTile);
    return Promise.all(jobs).then(function () {
      if (mine !== cycle) return;
      var widgetCount = Object.keys(tiles).length;
      host.emit("dashboard-loaded", {
        publicId: boot.publicId,
        widgetCount: widgetCount,
        loadDurationMs: Math.round(performance.now() - startedAt),
      });
      loadedOnce = true;
    });
  }

  function loadTile(tile) {
    if (tile.controller) tile.controller.abort();
    var controller = new AbortController();
    tile.controller = controller;
    setTileStatus(tile, "loading");
    if (!tile.result) showSkeleton(tile);
    // A pivot table's totals are queries of their own (composed by the server), loaded beside its rows.
    var totals = (tile.widget.spec && tile.widget.spec.totals) || {};
    var names = tile.kind === "pivot" ? Object.keys(totals) : [];
    var loads = [K.coreLoad(session, tile.widget.query, controller.signal)].concat(
      names.map(function (name) {
        return K.coreLoad(session, totals[name], controller.signal);
      })
    );
    return Promise.all(loads).then(
      function (results) {
        if (controller.signal.aborted) return;
        tile.result = results[0];
        tile.totals = {};
        names.forEach(function (name, i) {
          tile.totals[name] = results[i + 1];
        });
        return renderTile(tile).then(
          function () {
            setTileStatus(tile, "ready");
          },
          function (error) {
            showTileError(tile, "This chart could not be drawn", error);
          }
        );
      },
      function (error) {
        if (error && error.name === "AbortError") return;
        if (controller.signal.aborted) return;
        if (K.isSessionEnded(error)) {
          tile.result = null;
          showTileError(tile, "Session ended", error, true);
          if (!sessionEndedReported) {
            sessionEndedReported = true;
            host.error("Session ended", "SessionEnded", "tile-load", true);
          }
          return;
        }
        showTileError(tile, error.message || "This tile could not load", error);
        host.error(error.message || String(error), error.name || "Error", "tile:" + tile.widget.id, false);
      }
    );
  }

  function showSkeleton(tile) {
    disposeVega(tile);
    K.clear(tile.body);
    tile.body.appendChild(h("div.skeleton", { "aria-label": "Loading" }, h("span"), h("span"), h("span")));
  }

  function showTileError(tile, message, error, ended) {
    disposeVega(tile);
    setTileStatus(tile, "error");
    K.clear(tile.body);
    var box = h("div.tile-error" + (ended ? ".tile-ended" : ""), { role: "alert" }, h("p.tile-error-title", message));
    if (!ended) {
      var retry = h("button.link-button", { type: "button" }, "Retry");
      retry.addEventListener("click", function () {
        loadTile(tile);
      });
      box.appendChild(retry);
    }
    tile.body.appendChild(box);
  }

  function disposeVega(tile) {
    if (tile.vegaView) {
      tile.vegaView.finalize();
      tile.vegaView = null;
      tile.vegaKey = null;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Renderers: a tile's rows drawn by the shared tile drawing (tiles.js: table, KPI, pivot, chart), text
  // ---------------------------------------------------------------------------------------------

  function chartKey(tile) {
    return JSON.stringify(tile.widget.spec) + "|" + (K.isDark() ? "dark" : "light") + "|" + (tile.themeKey || "") + "|" + formatter.locale;
  }

  /** Draw the tile's rows as the server composed it; a chart whose spec, theme and locale are unchanged has its rows
   * swapped in place (no flicker). */
  function renderTile(tile) {
    var widget = tile.widget;
    var rows = tile.result.data || [];
    var key = chartKey(tile);
    if (tile.kind === "vega" && tile.vegaView && tile.vegaKey === key) {
      return tile.vegaView.data("table", K.Tiles.chartRows(widget, rows)).runAsync();
    }
    disposeVega(tile);
    var totals = {};
    Object.keys(tile.totals || {}).forEach(function (name) {
      totals[name] = tile.totals[name].data || [];
    });
    var options = {
      formatter: function () {
        return formatter;
      },
      totals: totals,
      kpiLabel: !widget.title,
    };
    return K.Tiles.draw(tile.body, Object.assign({}, widget, { kind: tile.kind }), rows, options).then(function (result) {
      if (!result) return;
      tile.vegaView = result.view;
      tile.vegaKey = key;
      watchSize(tile, tile.body.querySelector(".chart"));
      result.view.addEventListener("click", function (event, item) {
        drilldown(tile, item);
      });
      result.view.addEventListener("mouseout", function () {
        K.hideTooltip();
      });
    });
  }

  /** Vega's "container" size follows the window only: a tile that narrows without the window doing so (the chat
   * panel opening, a host resizing the frame's column) has its chart refitted. */
  var refitQueued = false;

  function watchSize(tile, target) {
    if (typeof ResizeObserver === "undefined") return;
    if (tile.sizeWatch) tile.sizeWatch.disconnect();
    var last = target.clientWidth + "x" + target.clientHeight;
    tile.sizeWatch = new ResizeObserver(function () {
      var size = target.clientWidth + "x" + target.clientHeight;
      if (size === last || !tile.vegaView) return;
      last = size;
      // Vega-Lite's container width is a signal on the window's resize event: tell it, once per frame.
      if (!refitQueued) {
        refitQueued = true;
        window.requestAnimationFrame(function () {
          refitQueued = false;
          window.dispatchEvent(new Event("resize"));
        });
      }
    });
    tile.sizeWatch.observe(target);
  }

  /** A click on a chart's mark: the first of the tile's dimension columns the clicked row has. */
  function drilldown(tile, item) {
    var datum = item && item.datum;
    if (!datum || typeof datum !== "object") return;
    var columns = (tile.widget.columns || []).filter(function (column) {
      return column.type !== "number";
    });
    for (var i = 0; i < columns.length; i += 1) {
      if (Object.prototype.hasOwnProperty.call(datum, columns[i].key)) {
        var value = datum[columns[i].key];
        if (value instanceof Date) value = value.toISOString();
        host.emit("drilldown", { member: columns[i].member, value: value, widgetId: tile.widget.id });
        return;
      }
    }
  }

  function renderText(tile) {
    K.clear(tile.body);
    K.paragraphs(tile.widget.text || (tile.widget.config && tile.widget.config.text) || "").forEach(function (paragraph) {
      tile.body.appendChild(h("p.text-paragraph", paragraph));
    });
  }

  function rerenderCharts() {
    Object.keys(tiles).forEach(function (id) {
      var tile = tiles[id];
      if (tile.kind === "vega" && tile.result && tile.status === "ready") {
        disposeVega(tile);
        renderTile(tile).catch(function (error) {
          showTileError(tile, "This chart could not be drawn", error);
        });
      }
    });
  }

  function reformatTiles() {
    Object.keys(tiles).forEach(function (id) {
      var tile = tiles[id];
      if (tile.status !== "ready" || !tile.result) return;
      renderTile(tile).catch(function (error) {
        showTileError(tile, "This chart could not be drawn", error);
      });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Export: per-tile menu (CSV through the export endpoint, PNG drawn from the chart)
  // ---------------------------------------------------------------------------------------------

  // The flags of a view answer are the token's signed settings narrowed by the page URL: after a renewal in place
  // they may differ from the bootstrap's, so the menus follow them.
  function syncExportMenus() {
    var allowed = !!(boot.flags || {}).allowExport;
    Object.keys(tiles).forEach(function (id) {
      var tile = tiles[id];
      if (tile.kind === "text") return;
      var menu = tile.head.querySelector(".tile-menu");
      if (allowed && !menu) tile.head.appendChild(exportMenu(tile));
      else if (!allowed && menu) tile.head.removeChild(menu);
    });
  }

  function exportMenu(tile) {
    var details = h("details.tile-menu");
    var summary = h("summary.icon-button", { "aria-label": "Download", title: "Download" }, h("span.dots", { "aria-hidden": "true" }));
    var list = h("div.menu", { role: "menu" });
    var csv = h("button.menu-item", { type: "button", role: "menuitem" }, "Download CSV");
    csv.addEventListener("click", function () {
      details.open = false;
      exportCsv(tile);
    });
    list.appendChild(csv);
    if (tile.kind === "vega") {
      var png = h("button.menu-item", { type: "button", role: "menuitem" }, "Download PNG");
      png.addEventListener("click", function () {
        details.open = false;
        exportPng(tile);
      });
      list.appendChild(png);
    }
    document.addEventListener("click", function (event) {
      if (details.open && !details.contains(event.target)) details.open = false;
    });
    details.appendChild(summary);
    details.appendChild(list);
    return details;
  }

  function exportCsv(tile) {
    var widget = tile.widget;
    K.request(boot.endpoints.export, {
      method: "POST",
      headers: { Authorization: session.embedAuth(), Accept: "text/csv" },
      body: { grant: boot.grant, state: view.state || {}, widgetId: widget.id, format: "csv" },
      raw: true,
    })
      .then(function (answer) {
        var response = answer.response;
        return response.text().then(function (text) {
          var header = response.headers.get("X-Row-Count");
          var rowCount = header !== null && header !== "" && !isNaN(Number(header)) ? Number(header) : K.csvRecordCount(text);
          K.downloadBlob(new Blob([text], { type: "text/csv;charset=utf-8" }), K.safeFilename(widget.title || widget.id) + ".csv");
          host.emit("download", { format: "csv", target: "widget", widgetId: widget.id, title: widget.title || "", rowCount: rowCount });
        });
      })
      .catch(function (error) {
        host.error(error.message || String(error), error.name || "ExportError", "export:" + widget.id, false);
        flash(tile, K.isSessionEnded(error) ? "Session ended" : "Download failed: " + (error.message || error));
      });
  }

  function exportPng(tile) {
    var widget = tile.widget;
    if (!tile.vegaView) return;
    tile.vegaView
      .toImageURL("png", 2)
      .then(function (url) {
        K.download(url, K.safeFilename(widget.title || widget.id) + ".png");
        var rowCount = tile.result && tile.result.data ? tile.result.data.length : 0;
        host.emit("download", { format: "png", target: "widget", widgetId: widget.id, title: widget.title || "", rowCount: rowCount });
      })
      .catch(function (error) {
        host.error(error.message || String(error), "ExportError", "export:" + widget.id, false);
      });
  }

  function flash(tile, message) {
    var note = h("div.tile-flash", { role: "status" }, message);
    tile.el.appendChild(note);
    setTimeout(function () {
      if (note.parentNode) note.parentNode.removeChild(note);
    }, 4000);
  }

  // ---------------------------------------------------------------------------------------------
  // View updates: the server composes the view for a state; changed tiles run again
  // ---------------------------------------------------------------------------------------------

  // Every change, a control's or a host action's, is an operation applied in order on top of the newest state asked
  // for, never on the state last shown: a change made while an answer is on its way is not lost. A request carries
  // the newest state with the queued operations applied; a host set-filter is one whose result only the server knows
  // (it reads the parameter against the controls), so the operations after it wait for its answer and start from the
  // state it gives. Only the answer to the newest request is shown: an older one never overwrites a newer state.
  var pending = []; // operations not sent yet: {mutate?, filterUrlParameter?, filtersChanged?, reloadAll?}
  var inFlight = null; // the newest request: {controller, startedAt}
  var asked = null; // the newest state asked for; null while it is the answer of a set-filter still on its way
  var carried = {}; // what the requests whose answers were not shown ask of the answer that is

  function stateChange(operation) {
    pending.push(operation);
    pump();
  }

  function pump() {
    if (!pending.length || (inFlight && asked === null)) return;
    var state = stateCopy(asked || view.state);
    var parameter = null;
    while (pending.length && parameter === null) {
      var operation = pending.shift();
      if (operation.mutate) operation.mutate(state);
      if (operation.filterUrlParameter) parameter = operation.filterUrlParameter;
      carried.filtersChanged = carried.filtersChanged || !!operation.filtersChanged;
      carried.reloadAll = carried.reloadAll || !!operation.reloadAll;
    }
    if (inFlight) inFlight.controller.abort(); // superseded: what it asked is part of this request
    asked = parameter === null ? state : null;
    var body = { grant: boot.grant, state: state };
    if (parameter !== null) body.filterUrlParameter = parameter;
    send(body);
  }

  function send(body) {
    var request = { controller: new AbortController(), startedAt: inFlight ? inFlight.startedAt : performance.now() };
    inFlight = request;
    root.classList.add("is-updating");
    K.request(boot.endpoints.view, {
      method: "POST",
      headers: { Authorization: session.embedAuth() },
      body: body,
      signal: request.controller.signal,
    }).then(
      function (answer) {
        if (inFlight !== request) return; // a newer request was sent since
        inFlight = null;
        takeGrant(answer.body);
        asked = answer.body.state;
        if (pending.length) return pump(); // a newer change waits: this answer is not the state to show
        var options = carried;
        carried = {};
        asked = null;
        root.classList.remove("is-updating");
        applyView(answer.body, options, request.startedAt);
        if (options.filtersChanged) {
          host.emit("filters-changed", { filterUrlParameters: view.filterUrlParameters || [], state: view.state || {} });
        }
      },
      function (error) {
        if (inFlight !== request || (error && error.name === "AbortError")) return;
        inFlight = null;
        asked = null; // what failed is lost (the banner says so); what follows starts from the state shown
        carried = {};
        var ended = K.isSessionEnded(error);
        host.error(ended ? "Session ended" : error.message || String(error), ended ? "SessionEnded" : error.name || "ViewError", "view", false);
        showBanner(ended ? "Session ended" : "The dashboard could not be updated: " + (error.message || error));
        if (pending.length) return pump();
        root.classList.remove("is-updating");
        renderControls(); // put the controls back to the state the tiles show
      }
    );
  }

  /** The server signs a fresh grant with every view, for the token in hand: a page renewed in place keeps filtering,
   * and exports as the new session allows (its flags). */
  function takeGrant(next) {
    if (typeof next.grant === "string" && next.grant) boot.grant = next.grant;
    if (next.flags && typeof next.flags === "object") {
      var flagsChanged = !!(boot.flags || {}).allowExport !== !!next.flags.allowExport;
      boot.flags = next.flags;
      if (flagsChanged) syncExportMenus();
    }
  }

  function applyView(next, options, startedAt) {
    var previous = view;
    view = next;
    if (next.state && next.state.timezone && next.state.timezone !== formatter.timezone) {
      formatter = new K.Formatter(formatter.locale, next.state.timezone);
    }
    renderControls();
    var before = {};
    (previous.widgets || []).forEach(function (widget) {
      before[widget.id] = widget;
    });
    var sameLayout =
      JSON.stringify((previous.widgets || []).map(layoutKey)) === JSON.stringify((next.widgets || []).map(layoutKey));
    if (!sameLayout) {
      buildGrid();
      return loadTiles(Object.keys(tiles), startedAt);
    }
    var changed = [];
    (next.widgets || []).forEach(function (widget) {
      var tile = tiles[widget.id];
      if (!tile) return;
      var old = before[widget.id] || {};
      tile.widget = widget;
      if (tile.kind === "text") {
        renderText(tile);
        return;
      }
      var titleNode = tile.head.querySelector(".tile-title");
      if (titleNode) titleNode.textContent = widget.title || "";
      if (options.reloadAll || JSON.stringify(old.query) !== JSON.stringify(widget.query)) changed.push(widget.id);
      else if (JSON.stringify([old.spec, old.columns]) !== JSON.stringify([widget.spec, widget.columns])) {
        if (tile.result) renderTile(tile).catch(function () {});
      }
    });
    if (changed.length) return loadTiles(changed, startedAt);
  }

  function layoutKey(widget) {
    return [widget.id, widget.type, widget.kind || "", JSON.stringify(widget.position || {})];
  }

  function showBanner(message) {
    var old = root.querySelector(".dash-banner");
    if (old) old.parentNode.removeChild(old);
    var banner = h("div.dash-banner", { role: "alert" }, h("span", message));
    var close = h("button.icon-button", { type: "button", "aria-label": "Dismiss" }, "×");
    close.addEventListener("click", function () {
      banner.parentNode.removeChild(banner);
    });
    banner.appendChild(close);
    root.insertBefore(banner, grid);
  }

  // ---------------------------------------------------------------------------------------------
  // Host actions
  // ---------------------------------------------------------------------------------------------

  function bindActions() {
    host.on("set-theme", function (theme) {
      K.applyTheme(theme);
      Object.keys(tiles).forEach(function (id) {
        tiles[id].themeKey = JSON.stringify(theme);
      });
      rerenderCharts();
    });
    host.on("set-color-scheme", function (payload) {
      var scheme = payload.scheme;
      if (scheme !== "light" && scheme !== "dark" && scheme !== "auto") throw new Error("scheme must be light, dark or auto");
      K.setScheme(scheme);
      rerenderCharts();
    });
    host.on("set-locale", function (payload) {
      var locale = K.usableLocale(payload.locale);
      if (!locale) throw new Error("Unknown locale: " + payload.locale);
      formatter = new K.Formatter(locale, formatter.timezone);
      document.documentElement.lang = locale;
      reformatTiles();
    });
    host.on("set-timezone", function (payload) {
      var timezone = K.usableTimezone(payload.timezone);
      if (!timezone) throw new Error("Unknown time zone: " + payload.timezone);
      formatter = new K.Formatter(formatter.locale, timezone);
      stateChange({
        mutate: function (state) {
          state.timezone = timezone;
        },
        reloadAll: true,
      });
    });
    host.on("set-filter", function (payload) {
      if (typeof payload.filterUrlParameter !== "string") throw new Error("set-filter needs a filterUrlParameter");
      stateChange({ filterUrlParameter: payload.filterUrlParameter, filtersChanged: true });
    });
    host.on("refresh", function () {
      valueCache = {};
      loadTiles(Object.keys(tiles), performance.now());
    });
    host.on("set-session", function (payload) {
      session.renew(payload.sessionId).then(function (ok) {
        if (!ok) return;
        sessionEndedReported = false;
        if (controlsBar.querySelector(".control-error")) {
          valueCache = {};
          renderControls();
        }
        // Tiles that ended with the old token run again with the new one.
        var ended = Object.keys(tiles).filter(function (id) {
          return tiles[id].status === "error";
        });
        if (ended.length) loadTiles(ended, performance.now());
        // The grant belongs to a session: trade the old one for a grant of the new token, with its flags.
        stateChange({});
      });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Chat: launcher bubble and docked agent panel, when the session allows it
  // ---------------------------------------------------------------------------------------------

  function mountChat() {
    var settings = boot.settings || {};
    var endpoints = boot.endpoints || {};
    if (!settings.showDashboardChat || !settings.allowAi || !endpoints.chat || !K.Chat) return;
    K.Chat.mount({
      session: session,
      host: host,
      endpoint: endpoints.chat,
      docked: true,
      launcherContainer: actionsSlot,
      title: "Ask about this dashboard",
      formatter: function () {
        return formatter;
      },
      context: function () {
        // The Cube filters the controls apply (composed by the server's view): the agent narrows its answers by them.
        return { dashboard: { publicId: boot.publicId, filters: view.contextFilters || [] } };
      },
    });
  }

  // Expose read-only facts for browser tests (never the token).
  window.embedDashboard = {
    tileStatus: function () {
      var out = {};
      Object.keys(tiles).forEach(function (id) {
        out[id] = tiles[id].status;
      });
      return out;
    },
    loaded: function () {
      return loadedOnce;
    },
    idle: function () {
      return !inFlight && !pending.length;
    },
    state: function () {
      return JSON.parse(JSON.stringify(view.state || {}));
    },
    rowCount: function (id) {
      var tile = tiles[id];
      return tile && tile.result ? (tile.result.data || []).length : null;
    },
    /** Where a chart's marks are, in the page's pixels: the centre of each item of its data marks, in order. */
    marks: function (id) {
      var tile = tiles[id];
      var out = [];
      if (!tile || !tile.vegaView) return out;
      var box = tile.vegaView.container().querySelector("canvas").getBoundingClientRect();
      var padding = tile.vegaView.padding();
      var origin = [tile.vegaView.origin()[0] + (padding.left || 0), tile.vegaView.origin()[1] + (padding.top || 0)];
      function walk(node, x, y) {
        (node.items || []).forEach(function (item) {
          if (node.marktype === "group") return walk(item, x + (item.x || 0), y + (item.y || 0));
          if (item.items) return walk(item, x, y);
          if (node.role === "mark" && item.datum && item.x !== undefined) {
            var cx = item.x + (item.width || 0) / 2;
            var cy = item.y + (item.height || 0) / 2;
            if (node.marktype === "arc") {
              var angle = (item.startAngle + item.endAngle) / 2;
              var radius = ((item.innerRadius || 0) + (item.outerRadius || 0)) / 2;
              cx = item.x + Math.sin(angle) * radius;
              cy = item.y - Math.cos(angle) * radius;
            }
            out.push({ x: box.left + origin[0] + x + cx, y: box.top + origin[1] + y + cy, marktype: node.marktype });
          }
        });
      }
      walk(tile.vegaView.scenegraph().root, 0, 0);
      return out;
    },
    /** A chart's axis labels and titles as drawn, by the axis's side: {bottom: {labels, title}, left: ...}. */
    axes: function (id) {
      var tile = tiles[id];
      var out = {};
      function walk(node, orient) {
        if (!node) return;
        if (node.marktype === "group" && node.role === "axis" && node.items && node.items[0]) {
          orient = node.items[0].orient;
          out[orient] = out[orient] || { labels: [], title: null };
        }
        if (orient && (node.role === "axis-label" || node.role === "axis-title")) {
          (node.items || []).forEach(function (item) {
            if (item.opacity === 0) return;
            var text = Array.isArray(item.text) ? item.text.join(" ") : String(item.text);
            if (node.role === "axis-label") out[orient].labels.push(text);
            else out[orient].title = text;
          });
          return;
        }
        (node.items || []).forEach(function (child) {
          walk(child, orient);
        });
      }
      if (tile && tile.vegaView) walk(tile.vegaView.scenegraph().root, null);
      return out;
    },
  };

  start();
})();
