// The panel's report builder (templates/panel/report_builder.html; the server side and its rules are in
// embedadmin/panel/admin/builder.py). The fields make a Cube query; a chart type's visualization is asked from the
// server (dashboards/charts.py), never made here; the preview is the server's composition of the tile for the chosen
// viewer, drawn with the embed page's Formatter and embedVega (static/embed/common.js). No framework, no build step,
// no inline script or style (the page runs under a strict CSP).
(function () {
  "use strict";

  var K = window.EmbedKit;
  var h = K.h;
  var boot = null;
  var members = {}; // every member of the catalog, by name
  var formatter = null;
  var state = {
    reportId: null,
    filters: [], // {member, operator, values: []}
    visualization: null, // the chart type's visualization, as the server made it
    notes: [],
    queryEdited: null, // the Advanced tab's query text, once written by hand
    visEdited: null, // the Advanced tab's visualization text, once written by hand
    dirty: false,
    generation: 0, // each change of the report; answers for an older one are dropped
    inflight: null, // the preview request's AbortController
    vegaView: null,
    timer: null,
    shown: null, // the preview's answer on screen
    valueRequests: {},
  };

  function $(id) {
    return document.getElementById(id);
  }

  // ---------------------------------------------------------------------------------------------
  // HTTP: the panel's own endpoints, with its session cookie and CSRF token
  // ---------------------------------------------------------------------------------------------

  function post(url, body, signal) {
    var options = { method: "POST", body: body, signal: signal, credentials: "same-origin", headers: { "X-CSRFToken": boot.csrfToken } };
    return K.request(url, options).then(
      function (answer) {
        return answer.body;
      },
      function (error) {
        error.field = error.body && error.body.field; // where the page shows the refusal
        throw error;
      }
    );
  }

  // ---------------------------------------------------------------------------------------------
  // The catalog: cubes and views with their members
  // ---------------------------------------------------------------------------------------------

  function entityOf(name) {
    for (var i = 0; i < boot.catalog.length; i += 1) if (boot.catalog[i].name === name) return boot.catalog[i];
    return null;
  }

  function currentEntity() {
    return entityOf($("b-entity").value);
  }

  function titleOf(name) {
    var member = members[name];
    return member ? member.title : name; // the title a person reads it by (the server's)
  }

  /** How a member's filter values are read: string, number, time or boolean (the operators' table's keys). */
  function valueType(member) {
    var type = member && member.type;
    return boot.operators[type] ? type : "string";
  }

  function option(value, label, selected) {
    var element = h("option", { value: value }, label);
    if (selected) element.selected = true;
    return element;
  }

  /** Options of `names` grouped by the entity's folders (the rest under "Other"), when it has folders. */
  function groupedOptions(entity, names, chosen) {
    var folders = (entity.folders || []).filter(function (folder) {
      return folder.members.some(function (name) {
        return names.indexOf(name) !== -1;
      });
    });
    var make = function (name) {
      return option(name, titleOf(name), chosen.indexOf(name) !== -1);
    };
    if (!folders.length) return names.map(make);
    var placed = {};
    var groups = folders.map(function (folder) {
      var inside = folder.members.filter(function (name) {
        return names.indexOf(name) !== -1 && !placed[name];
      });
      inside.forEach(function (name) {
        placed[name] = true;
      });
      return h("optgroup", { label: folder.name }, inside.map(make));
    });
    var rest = names.filter(function (name) {
      return !placed[name];
    });
    if (rest.length) groups.push(h("optgroup", { label: "Other" }, rest.map(make)));
    return groups;
  }

  function fill(select, options) {
    K.clear(select);
    K.append(select, options);
  }

  function selectedValues(select) {
    return Array.prototype.map.call(select.selectedOptions, function (o) {
      return o.value;
    });
  }

  function setSelected(select, values) {
    Array.prototype.forEach.call(select.options, function (o) {
      o.selected = values.indexOf(o.value) !== -1;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // The fields
  // ---------------------------------------------------------------------------------------------

  function fillEntities(chosen) {
    var views = boot.catalog.filter(function (e) {
      return e.type === "view";
    });
    var cubes = boot.catalog.filter(function (e) {
      return e.type !== "view";
    });
    var make = function (e) {
      return option(e.name, e.title === e.name ? e.name : e.title + " (" + e.name + ")", e.name === chosen);
    };
    fill($("b-entity"), [
      views.length ? h("optgroup", { label: "Views" }, views.map(make)) : null,
      cubes.length ? h("optgroup", { label: "Cubes" }, cubes.map(make)) : null,
    ]);
  }

  /** Refill every member list for the chosen cube or view, keeping what is chosen where it still exists. */
  function fillMembers(keep) {
    var entity = currentEntity();
    if (!entity) return;
    keep = keep || {};
    var measureNames = entity.measures.map(function (m) {
      return m.name;
    });
    var dims = entity.dimensions.filter(function (m) {
      return m.type !== "time";
    });
    var times = entity.dimensions.filter(function (m) {
      return m.type === "time";
    });
    fill($("b-measures"), groupedOptions(entity, measureNames, keep.measures || []));
    fill(
      $("b-dimensions"),
      groupedOptions(
        entity,
        dims.map(function (m) {
          return m.name;
        }),
        keep.dimensions || []
      )
    );
    fill($("b-time"), [option("", "None", !keep.time)].concat(times.map(function (m) {
      return option(m.name, titleOf(m.name), m.name === keep.time);
    })));
    fillGrains(keep.grain === undefined ? "month" : keep.grain);
    fillOrder(keep.order);
  }

  function fillGrains(chosen) {
    var time = members[$("b-time").value];
    var grains = [option("", "None (a date range only)", chosen === "")];
    boot.grains.forEach(function (grain) {
      grains.push(option(grain.name, grain.title, grain.name === chosen));
    });
    ((time && time.granularities) || []).forEach(function (grain) {
      grains.push(option(grain.name, grain.title, grain.name === chosen));
    });
    fill($("b-grain"), grains);
    $("b-grain").disabled = !time;
    $("b-range").disabled = !time;
  }

  function fillRanges(chosen) {
    var options = [option("", "All time", !chosen)];
    var known = false;
    boot.datePresets.forEach(function (preset) {
      known = known || preset.value === chosen;
      options.push(option(preset.value, preset.label, preset.value === chosen));
    });
    if (chosen && chosen !== "custom" && !known) options.push(option(chosen, chosen, true));
    options.push(option("custom", "Custom dates…", chosen === "custom"));
    fill($("b-range"), options);
    $("b-range-custom").hidden = $("b-range").value !== "custom";
  }

  function fillOrder(chosen) {
    var names = selectedValues($("b-measures")).concat(selectedValues($("b-dimensions")));
    if ($("b-time").value) names.push($("b-time").value);
    var current = chosen === undefined ? $("b-order").value : chosen;
    var options = [option("", "Default", !current)];
    names.forEach(function (name) {
      ["asc", "desc"].forEach(function (direction) {
        var value = JSON.stringify([name, direction]);
        var words = direction === "asc" ? "ascending" : "descending";
        options.push(option(value, titleOf(name) + ", " + words, value === current));
      });
    });
    fill($("b-order"), options);
  }

  function fillChartTypes(chosen) {
    fill(
      $("b-chart"),
      boot.chartTypes.map(function (chart) {
        return option(chart.name, chart.label, chart.name === chosen);
      })
    );
  }

  function fillViewers() {
    var options = boot.viewers.map(function (viewer) {
      return option(String(viewer.id), viewer.label, false);
    });
    options.push(option("typed", "A viewer described here…", !boot.viewers.length));
    fill($("b-viewer"), options);
    $("b-typed-viewer").hidden = $("b-viewer").value !== "typed";
  }

  function fillWorkbooks() {
    if (!boot.workbooks.length) {
      fill($("b-workbook"), [option("", "No workbook in this deployment", true)]);
      $("b-workbook").disabled = true;
      $("b-add").disabled = true;
      return;
    }
    var own = boot.report && boot.report.workbookId;
    fill(
      $("b-workbook"),
      boot.workbooks.map(function (workbook) {
        return option(String(workbook.id), workbook.name, workbook.id === own);
      })
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Filters
  // ---------------------------------------------------------------------------------------------

  function filterMembers() {
    var entity = currentEntity();
    if (!entity) return [];
    return entity.dimensions.concat(entity.measures);
  }

  function renderFilters() {
    var list = $("b-filter-list");
    K.clear(list);
    state.filters.forEach(function (filter, index) {
      list.appendChild(filterRow(filter, index));
    });
  }

  function filterRow(filter, index) {
    var number = index + 1;
    var prefix = "b-filter-" + number;
    var entity = currentEntity();
    var dims = entity.dimensions.map(function (m) {
      return option(m.name, titleOf(m.name), m.name === filter.member);
    });
    var measures = entity.measures.map(function (m) {
      return option(m.name, titleOf(m.name), m.name === filter.member);
    });
    var memberSelect = h("select", { id: prefix + "-member" }, h("optgroup", { label: "Dimensions" }, dims), h("optgroup", { label: "Measures" }, measures));
    memberSelect.addEventListener("change", function () {
      filter.member = memberSelect.value;
      filter.operator = boot.operators[valueType(members[filter.member])][0];
      filter.values = [];
      renderFilters();
      changed();
    });
    var type = valueType(members[filter.member]);
    var operatorSelect = h(
      "select",
      { id: prefix + "-operator" },
      boot.operators[type].map(function (op) {
        return option(op, boot.operatorWords[op] || op, op === filter.operator);
      })
    );
    operatorSelect.addEventListener("change", function () {
      var before = valueControlKind(filter);
      filter.operator = operatorSelect.value;
      if (valueControlKind(filter) !== before) filter.values = [];
      renderFilters();
      changed();
    });
    var remove = h("button.builder-link", { type: "button", "aria-label": "Remove filter " + number }, "Remove");
    remove.addEventListener("click", function () {
      state.filters.splice(index, 1);
      renderFilters();
      changed();
    });
    return h(
      "div.builder-filter",
      { role: "group", "aria-label": "Filter " + number },
      h("div.builder-field", h("label", { for: prefix + "-member" }, "Filter " + number + ": member"), memberSelect),
      h("div.builder-field", h("label", { for: prefix + "-operator" }, "Filter " + number + ": operator"), operatorSelect),
      valueControl(filter, prefix, number),
      remove
    );
  }

  /** Which control takes a filter's values: none, a listbox of looked-up values, dates, or one typed value. */
  function valueControlKind(filter) {
    if (boot.valueless.indexOf(filter.operator) !== -1) return "none";
    var member = members[filter.member];
    var type = valueType(member);
    if (type === "time") return filter.operator === "inDateRange" || filter.operator === "notInDateRange" ? "range" : "date";
    if (type === "boolean") return "boolean";
    if (type === "string" && member.kind !== "measure" && (filter.operator === "equals" || filter.operator === "notEquals")) return "list";
    return type === "number" ? "number" : "text";
  }

  function valueControl(filter, prefix, number) {
    var kind = valueControlKind(filter);
    var label = "Filter " + number + ": ";
    if (kind === "none") return null;
    if (kind === "list") return valueList(filter, prefix, label);
    if (kind === "range" || kind === "date") {
      var names = kind === "range" ? ["from", "to"] : ["date"];
      return h(
        "div.builder-row",
        names.map(function (name, i) {
          var input = h("input", { type: "date", id: prefix + "-" + name, value: filter.values[i] || "" });
          input.addEventListener("change", function () {
            filter.values[i] = input.value;
            changed();
          });
          return h("div.builder-field", h("label", { for: input.id }, label + name), input);
        })
      );
    }
    if (kind === "boolean") {
      var select = h("select", { id: prefix + "-value" }, option("", "—", !filter.values.length), option("true", "true", filter.values[0] === "true"), option("false", "false", filter.values[0] === "false"));
      select.addEventListener("change", function () {
        filter.values = select.value ? [select.value] : [];
        changed();
      });
      return h("div.builder-field", h("label", { for: select.id }, label + "value"), select);
    }
    var input = h("input", { type: kind === "number" ? "number" : "text", id: prefix + "-value", value: filter.values[0] || "", autocomplete: "off" });
    input.addEventListener("input", function () {
      filter.values = input.value === "" ? [] : [input.value];
      changed();
    });
    return h("div.builder-field", h("label", { for: input.id }, label + "value"), input);
  }

  /** A listbox of the member's values as the preview's viewer reads them (looked up through the Core Data API),
   * with a search that asks again. What is chosen stays chosen across searches. */
  function valueList(filter, prefix, label) {
    var listbox = h("select", { id: prefix + "-values", multiple: true, size: 6 });
    var search = h("input", { type: "search", id: prefix + "-search", autocomplete: "off", placeholder: "Search values" });
    var note = h("p.builder-help", { role: "status" });
    function show(values) {
      var all = filter.values.concat(
        values.filter(function (v) {
          return filter.values.indexOf(v) === -1;
        })
      );
      fill(
        listbox,
        all.map(function (v) {
          return option(v, v, filter.values.indexOf(v) !== -1);
        })
      );
    }
    function lookUp() {
      note.textContent = "Looking up values…";
      listbox.setAttribute("aria-busy", "true");
      lookUpValues(filter.member, search.value).then(
        function (answer) {
          listbox.removeAttribute("aria-busy");
          show(answer.values);
          note.textContent = answer.values.length ? (answer.truncated ? "The first " + answer.values.length + " values: search for more." : "") : "No values for this viewer.";
        },
        function (error) {
          listbox.removeAttribute("aria-busy");
          note.textContent = "Values could not be looked up: " + error.message;
        }
      );
    }
    listbox.addEventListener("change", function () {
      var shown = Array.prototype.map.call(listbox.options, function (o) {
        return o.value;
      });
      var kept = filter.values.filter(function (v) {
        return shown.indexOf(v) === -1;
      });
      filter.values = kept.concat(selectedValues(listbox));
      changed();
    });
    var searchTimer = null;
    search.addEventListener("input", function () {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(lookUp, 250);
    });
    show([]);
    lookUp();
    return h(
      "div.builder-field.builder-values",
      h("label", { for: search.id }, label + "search values"),
      search,
      h("label", { for: listbox.id }, label + "values"),
      listbox,
      note
    );
  }

  function lookUpValues(member, search) {
    var key = member + "\u0000" + (search || "") + "\u0000" + JSON.stringify(viewerBody());
    if (!state.valueRequests[key]) {
      var once = function () {
        return post(boot.endpoints.values, { member: member, viewer: viewerBody(), search: search || "" }).then(function (answer) {
          return answer.continueWait ? K.sleep(300).then(once) : answer;
        });
      };
      state.valueRequests[key] = once();
      state.valueRequests[key].catch(function () {
        delete state.valueRequests[key];
      });
    }
    return state.valueRequests[key];
  }

  // ---------------------------------------------------------------------------------------------
  // The query the fields make, and the fields a query gives
  // ---------------------------------------------------------------------------------------------

  function fieldsQuery() {
    var query = {};
    var measures = selectedValues($("b-measures"));
    var dimensions = selectedValues($("b-dimensions"));
    if (measures.length) query.measures = measures;
    if (dimensions.length) query.dimensions = dimensions;
    var time = $("b-time").value;
    if (time) {
      var td = { dimension: time };
      if ($("b-grain").value) td.granularity = $("b-grain").value;
      var range = $("b-range").value;
      if (range === "custom") {
        if ($("b-range-from").value && $("b-range-to").value) td.dateRange = [$("b-range-from").value, $("b-range-to").value];
      } else if (range) td.dateRange = range;
      if (td.granularity || td.dateRange) query.timeDimensions = [td];
    }
    var filters = state.filters
      .filter(function (f) {
        return f.member && f.operator && (boot.valueless.indexOf(f.operator) !== -1 || f.values.filter(Boolean).length);
      })
      .map(function (f) {
        var item = { member: f.member, operator: f.operator };
        if (boot.valueless.indexOf(f.operator) === -1) item.values = f.values.filter(Boolean);
        return item;
      });
    if (filters.length) query.filters = filters;
    if ($("b-order").value) {
      var pair = JSON.parse($("b-order").value);
      query.order = {};
      query.order[pair[0]] = pair[1];
    }
    var limit = Number($("b-limit").value);
    if ($("b-limit").value && Number.isInteger(limit) && limit > 0) query.limit = limit;
    return query;
  }

  /** The query to run and save: the Advanced tab's text when written by hand, else the fields'. */
  function currentQuery() {
    if (state.queryEdited === null) return { ok: true, query: fieldsQuery() };
    try {
      var parsed = JSON.parse(state.queryEdited);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return { ok: true, query: parsed };
      return { ok: false, message: "Cube query: must be a JSON object (a Cube query)" };
    } catch (error) {
      return { ok: false, message: "Cube query: not valid JSON (" + error.message + ")" };
    }
  }

  function namesMember(query, name) {
    return typeof name === "string" && !!members[name];
  }

  /** Whether the fields can show `query` exactly: one cube or view, one time dimension, flat filters, one order. */
  function expressible(query) {
    var allowed = ["measures", "dimensions", "timeDimensions", "filters", "order", "limit"];
    if (
      Object.keys(query).some(function (key) {
        return allowed.indexOf(key) === -1;
      })
    )
      return false;
    var names = (query.measures || []).concat(query.dimensions || []);
    var tds = query.timeDimensions || [];
    if (tds.length > 1) return false;
    tds.forEach(function (td) {
      names.push(td && td.dimension);
      if (td && td.dateRange !== undefined && typeof td.dateRange !== "string" && !(Array.isArray(td.dateRange) && td.dateRange.length === 2)) names.push(null);
    });
    var flat = (query.filters || []).every(function (f) {
      return f && typeof f === "object" && !f.and && !f.or && (f.member || f.dimension) && typeof f.operator === "string";
    });
    if (!flat) return false;
    (query.filters || []).forEach(function (f) {
      names.push(f.member || f.dimension);
    });
    var order = query.order;
    if (order && !Array.isArray(order) && Object.keys(order).length > 1) return false;
    if (Array.isArray(order) && order.length > 1) return false;
    if (!names.every(namesMember.bind(null, query))) return false;
    var entities = {};
    names.forEach(function (name) {
      entities[name.split(".")[0]] = true;
    });
    if (Object.keys(entities).length > 1) return false;
    return (query.dimensions || []).every(function (name) {
      return members[name].type !== "time";
    });
  }

  function entityOfQuery(query) {
    var names = (query.measures || []).concat(query.dimensions || []);
    (query.timeDimensions || []).forEach(function (td) {
      if (td && td.dimension) names.push(td.dimension);
    });
    for (var i = 0; i < names.length; i += 1) if (typeof names[i] === "string" && entityOf(names[i].split(".")[0])) return names[i].split(".")[0];
    return null;
  }

  /** Set the fields from a query the fields can express. */
  function loadFields(query) {
    var entity = entityOfQuery(query);
    if (entity) $("b-entity").value = entity;
    var td = (query.timeDimensions || [])[0] || null;
    var order = query.order;
    var pair = null;
    if (Array.isArray(order) && order.length) pair = order[0];
    else if (order && typeof order === "object" && Object.keys(order).length) pair = [Object.keys(order)[0], order[Object.keys(order)[0]]];
    fillMembers({
      measures: query.measures || [],
      dimensions: query.dimensions || [],
      time: td ? td.dimension : "",
      grain: td ? td.granularity || "" : "month",
    });
    var range = td && td.dateRange;
    if (Array.isArray(range)) {
      fillRanges("custom");
      $("b-range-from").value = String(range[0]).slice(0, 10);
      $("b-range-to").value = String(range[1]).slice(0, 10);
    } else fillRanges(range || "");
    fillOrder(pair ? JSON.stringify([pair[0], pair[1] || "asc"]) : "");
    $("b-limit").value = query.limit ? String(query.limit) : "";
    state.filters = (query.filters || []).map(function (f) {
      var values = (f.values || []).map(String);
      return { member: f.member || f.dimension, operator: f.operator, values: values };
    });
    renderFilters();
  }

  // ---------------------------------------------------------------------------------------------
  // Changes: the Advanced texts, the chart's visualization, the preview
  // ---------------------------------------------------------------------------------------------

  function showQueryText() {
    if (state.queryEdited === null) $("b-query-json").value = JSON.stringify(fieldsQuery(), null, 2);
    $("b-query-notice").hidden = state.queryEdited === null;
    $("b-fields-notice").hidden = state.queryEdited === null;
    $("b-fields-notice").textContent = "The query is written by hand in the Advanced tab: the fields below do not change it.";
  }

  function showVisualizationText() {
    if (state.visEdited === null) $("b-vis-json").value = state.visualization ? JSON.stringify(state.visualization, null, 2) : "";
    $("b-vis-notice").hidden = state.visEdited === null;
  }

  function markDirty() {
    state.dirty = true;
    $("b-save-status").textContent = state.reportId ? "Unsaved changes" : "Not saved yet";
  }

  /** Something about the report changed: the texts follow, and after a pause the chart and the preview. */
  function changed(options) {
    markDirty();
    fillOrder();
    showQueryText();
    schedule(options && options.now ? 0 : 400);
  }

  function schedule(delay) {
    state.generation += 1;
    var generation = state.generation;
    clearTimeout(state.timer);
    state.timer = setTimeout(function () {
      refresh(generation);
    }, delay);
  }

  function setError(id, message) {
    $(id).textContent = message || "";
  }

  function clearErrors() {
    ["b-name-error", "b-query-error", "b-vis-error", "b-chart-error", "b-save-error", "b-add-error", "b-preview-error"].forEach(function (id) {
      setError(id, "");
    });
  }

  /** An error of the server beside the field it is about (the Advanced tab shown for the query and the spec). */
  function showError(error, fallback) {
    var where = {
      name: "b-name-error",
      query: "b-query-error",
      visualization: "b-vis-error",
      chartType: "b-chart-error",
      viewer: "b-preview-error",
      member: "b-preview-error",
    }[error.field];
    setError(where || fallback, error.message);
    if (error.field === "query" || error.field === "visualization") selectTab("advanced");
    return where || fallback;
  }

  /** Ask the server for the chart type's visualization (unless it is written by hand), then run the preview. */
  function refresh(generation) {
    var current = currentQuery();
    setError("b-chart-error", "");
    if (!current.ok) {
      setError("b-query-error", current.message);
      return Promise.resolve();
    }
    setError("b-query-error", "");
    if (!hasMembers(current.query)) {
      // Nothing to draw yet: no chart to ask for, no query to run.
      if (state.visEdited === null) state.visualization = null;
      state.notes = [];
      showNotes();
      showVisualizationText();
      return Promise.resolve();
    }
    var chartType = $("b-chart").value;
    var made = state.visEdited !== null ? Promise.resolve() : post(boot.endpoints.visualization, { query: current.query, chartType: chartType }).then(
      function (answer) {
        if (generation !== state.generation) return;
        state.visualization = answer.visualization;
        state.notes = answer.notes || [];
        showNotes();
        showVisualizationText();
      },
      function (error) {
        if (generation !== state.generation) return;
        state.visualization = null;
        state.notes = [];
        showNotes();
        showVisualizationText();
        showError(error, "b-chart-error");
      }
    );
    return made.then(function () {
      if (generation !== state.generation || (state.visEdited === null && !state.visualization)) return;
      return run(generation);
    });
  }

  function hasMembers(query) {
    return !!((query.measures && query.measures.length) || (query.dimensions && query.dimensions.length) || (query.timeDimensions || []).some(function (td) {
      return td && td.granularity;
    }));
  }

  function showNotes() {
    fill(
      $("b-chart-notes"),
      state.notes.map(function (note) {
        return h("li", note);
      })
    );
  }

  function viewerBody() {
    var chosen = $("b-viewer").value;
    if (chosen !== "typed") return { externalUser: chosen };
    return {
      externalId: $("b-viewer-id").value,
      embedTenant: $("b-viewer-tenant").value,
      groups: $("b-viewer-groups").value,
      attributes: $("b-viewer-attributes").value,
    };
  }

  function visualizationToSend() {
    return state.visEdited !== null ? state.visEdited : state.visualization;
  }

  /** Run the report as the chosen viewer: the server composes the tile as the embed page would and loads its rows. */
  function run(generation) {
    var current = currentQuery();
    if (!current.ok) {
      setError("b-query-error", current.message);
      return Promise.resolve();
    }
    if (state.inflight) state.inflight.abort();
    var controller = typeof AbortController !== "undefined" ? new AbortController() : null;
    state.inflight = controller;
    setError("b-preview-error", "");
    $("b-preview-status").textContent = "Running…";
    $("b-preview").setAttribute("aria-busy", "true");
    var body = { query: current.query, visualization: visualizationToSend(), viewer: viewerBody(), title: $("b-name").value };
    var once = function () {
      return post(boot.endpoints.preview, body, controller && controller.signal).then(function (answer) {
        return answer && answer.continueWait ? K.sleep(300, controller && controller.signal).then(once) : answer;
      });
    };
    return once().then(
      function (answer) {
        if (generation !== state.generation) return;
        state.inflight = null;
        $("b-preview").removeAttribute("aria-busy");
        return draw(answer);
      },
      function (error) {
        if (error.name === "AbortError" || generation !== state.generation) return;
        state.inflight = null;
        $("b-preview").removeAttribute("aria-busy");
        $("b-preview-status").textContent = "";
        var where = showError(error, "b-preview-error");
        if (where !== "b-preview-error") setError("b-preview-error", "The preview did not run: see the message beside the field.");
        state.shown = null;
        disposeChart();
        K.clear($("b-preview-body"));
        $("b-preview-body").appendChild(h("p.builder-empty", "Nothing to show: the preview did not run."));
      }
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Drawing the preview: the tile as the server composed it, drawn by the embed page's own drawing (tiles.js)
  // ---------------------------------------------------------------------------------------------

  function count(n) {
    return new Intl.NumberFormat(formatter.locale).format(n);
  }

  function disposeChart() {
    if (state.vegaView) {
      state.vegaView.finalize();
      state.vegaView = null;
    }
    K.hideTooltip();
  }

  function draw(answer) {
    state.shown = answer;
    formatter = new K.Formatter(answer.locale, answer.timezone);
    var widget = answer.widget;
    var rows = answer.data || [];
    $("b-preview-status").textContent =
      count(answer.rowCount) + (answer.rowCount === 1 ? " row" : " rows") + " in " + count(answer.durationMs) + " ms, as " + answer.viewer;
    $("b-preview-title").textContent = $("b-name").value || "Untitled report";
    var body = $("b-preview-body");
    disposeChart();
    K.clear(body);
    body.className = "builder-tile-body builder-kind-" + widget.kind;
    if (!rows.length) {
      body.appendChild(h("p.builder-empty", "No rows for this query, as " + answer.viewer + "."));
      return Promise.resolve();
    }
    var options = {
      formatter: function () {
        return formatter;
      },
      totals: answer.totals || {},
      kpiLabel: true,
    };
    return K.Tiles.draw(body, widget, rows, options).then(
      function (result) {
        if (!result) return;
        state.vegaView = result.view;
        result.view.addEventListener("mouseout", function () {
          K.hideTooltip();
        });
      },
      function (error) {
        K.clear(body);
        body.appendChild(h("p.builder-error", { role: "alert" }, "The chart could not be drawn: " + (error.message || error)));
      }
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Saving, and putting the report on a dashboard
  // ---------------------------------------------------------------------------------------------

  function save() {
    clearErrors();
    var name = $("b-name").value.trim();
    if (!name) {
      setError("b-name-error", "Give the report a name.");
      $("b-name").focus();
      return Promise.reject(new Error("unnamed"));
    }
    var visualization = visualizationToSend();
    if (visualization === null || visualization === undefined) {
      setError("b-chart-error", $("b-chart-error").textContent || "Pick a chart type that can draw this query.");
      return Promise.reject(new Error("no visualization"));
    }
    var body = {
      name: name,
      jsonQuery: state.queryEdited !== null ? state.queryEdited : fieldsQuery(),
      visualization: visualization,
    };
    if (state.reportId) body.reportId = state.reportId;
    $("b-save").disabled = true;
    $("b-save-status").textContent = "Saving…";
    return post(boot.endpoints.save, body).then(
      function (answer) {
        $("b-save").disabled = false;
        var report = answer.report;
        state.reportId = report.id;
        state.dirty = false;
        $("b-save-status").textContent = "Saved “" + report.name + "” (version " + report.version + ", publicId " + report.publicId + ").";
        var url = boot.endpoints.edit.replace("{id}", String(report.id));
        if (window.location.pathname !== url) window.history.replaceState(null, "", url);
        var heading = document.querySelector("#content h1");
        if (heading) heading.textContent = "Edit report " + report.name;
        return answer;
      },
      function (error) {
        $("b-save").disabled = false;
        $("b-save-status").textContent = "Not saved.";
        showError(error, "b-save-error");
        throw error;
      }
    );
  }

  function addToDashboard() {
    clearErrors();
    $("b-add-status").textContent = "";
    var saved = state.dirty || !state.reportId ? save() : Promise.resolve();
    return saved
      .then(function () {
        $("b-add").disabled = true;
        return post(boot.endpoints.add, { reportId: state.reportId, workbookId: Number($("b-workbook").value) });
      })
      .then(
        function (answer) {
          $("b-add").disabled = false;
          K.clear($("b-add-status"));
          K.append($("b-add-status"), [
            "Added to the dashboard draft of ",
            h("a", { href: answer.workbookUrl }, answer.workbook.name),
            " (below its other widgets). Publish the workbook for viewers to see it.",
          ]);
        },
        function (error) {
          $("b-add").disabled = false;
          if (error.message === "unnamed" || error.message === "no visualization" || error.field) return;
          setError("b-add-error", error.message);
        }
      );
  }

  // ---------------------------------------------------------------------------------------------
  // Tabs
  // ---------------------------------------------------------------------------------------------

  function selectTab(name) {
    ["fields", "advanced"].forEach(function (tab) {
      var selected = tab === name;
      var button = $("b-tab-" + tab);
      button.setAttribute("aria-selected", selected ? "true" : "false");
      button.tabIndex = selected ? 0 : -1;
      $("b-panel-" + tab).hidden = !selected;
    });
  }

  function wireTabs() {
    ["fields", "advanced"].forEach(function (tab, index, all) {
      var button = $("b-tab-" + tab);
      button.addEventListener("click", function () {
        selectTab(tab);
      });
      button.addEventListener("keydown", function (event) {
        if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
        var next = all[(index + (event.key === "ArrowRight" ? 1 : all.length - 1)) % all.length];
        selectTab(next);
        $("b-tab-" + next).focus();
      });
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------------

  function wire() {
    $("b-entity").addEventListener("change", function () {
      fillMembers({});
      state.filters = [];
      renderFilters();
      changed();
    });
    ["b-measures", "b-dimensions", "b-grain", "b-order", "b-range-from", "b-range-to"].forEach(function (id) {
      $(id).addEventListener("change", function () {
        changed();
      });
    });
    $("b-limit").addEventListener("input", function () {
      changed();
    });
    $("b-time").addEventListener("change", function () {
      fillGrains($("b-grain").value || "month");
      changed();
    });
    $("b-range").addEventListener("change", function () {
      $("b-range-custom").hidden = $("b-range").value !== "custom";
      changed();
    });
    $("b-chart").addEventListener("change", function () {
      state.visEdited = null; // picking a chart type replaces a spec written by hand
      changed({ now: true });
    });
    $("b-add-filter").addEventListener("click", function () {
      var first = filterMembers()[0];
      if (!first) return;
      state.filters.push({ member: first.name, operator: boot.operators[valueType(first)][0], values: [] });
      renderFilters();
      changed();
      var select = $("b-filter-" + state.filters.length + "-member");
      if (select) select.focus();
    });
    $("b-name").addEventListener("input", function () {
      markDirty();
      $("b-preview-title").textContent = $("b-name").value;
    });
    $("b-query-json").addEventListener("input", function () {
      state.queryEdited = $("b-query-json").value;
      changed();
    });
    $("b-query-json").addEventListener("change", function () {
      var current = currentQuery();
      if (current.ok && expressible(current.query)) {
        // The fields can show it: they are the query again.
        state.queryEdited = null;
        loadFields(current.query);
        changed();
      }
    });
    $("b-query-reset").addEventListener("click", function () {
      state.queryEdited = null;
      changed({ now: true });
    });
    $("b-vis-json").addEventListener("input", function () {
      state.visEdited = $("b-vis-json").value;
      showVisualizationText();
      markDirty();
      schedule(400);
    });
    $("b-vis-reset").addEventListener("click", function () {
      state.visEdited = null;
      changed({ now: true });
    });
    $("b-viewer").addEventListener("change", function () {
      $("b-typed-viewer").hidden = $("b-viewer").value !== "typed";
      state.valueRequests = {};
      renderFilters();
      schedule(0);
    });
    ["b-viewer-id", "b-viewer-tenant", "b-viewer-groups", "b-viewer-attributes"].forEach(function (id) {
      $(id).addEventListener("change", function () {
        state.valueRequests = {};
        renderFilters();
        schedule(0);
      });
    });
    $("b-run").addEventListener("click", function () {
      clearTimeout(state.timer);
      state.generation += 1;
      refresh(state.generation);
    });
    $("b-save").addEventListener("click", function () {
      save().catch(function () {
        /* shown beside the field */
      });
    });
    $("b-add").addEventListener("click", addToDashboard);
  }

  function start() {
    var element = $("builder-bootstrap");
    if (!element) return;
    boot = JSON.parse(element.textContent);
    boot.catalog.forEach(function (entity) {
      entity.measures.forEach(function (m) {
        members[m.name] = Object.assign({ kind: "measure" }, m);
      });
      entity.dimensions.forEach(function (m) {
        members[m.name] = Object.assign({ kind: "dimension" }, m);
      });
    });
    formatter = new K.Formatter(boot.locale, boot.timezone);
    var report = boot.report;
    fillViewers();
    fillWorkbooks();
    wireTabs();
    var firstEntity = (boot.catalog.filter(function (e) {
      return e.type === "view";
    })[0] || boot.catalog[0] || {}).name;
    if (report) {
      state.reportId = report.id;
      $("b-name").value = report.name;
      var query = report.query || {};
      fillEntities(entityOfQuery(query) || firstEntity);
      fillChartTypes(report.chartType);
      if (report.query && expressible(query)) loadFields(query);
      else {
        fillMembers({});
        fillRanges("");
        if (report.query) loadFields(query);
        state.queryEdited = report.jsonQuery;
      }
      if (!report.exact && report.visualization) state.visEdited = JSON.stringify(report.visualization, null, 2);
      state.visualization = report.visualization;
      $("b-query-json").value = state.queryEdited !== null ? state.queryEdited : "";
      $("b-vis-json").value = state.visEdited !== null ? state.visEdited : "";
    } else {
      fillEntities(firstEntity);
      fillChartTypes("table");
      fillMembers({});
      fillRanges("");
    }
    wire();
    showQueryText();
    showVisualizationText();
    $("b-preview-title").textContent = $("b-name").value;
    state.dirty = false;
    $("b-save-status").textContent = report ? "Saved (version " + report.version + ")." : "";
    if (report) schedule(0);
  }

  // What tests read of the page (never written to): the rows and the query of the preview on screen.
  window.ReportBuilder = {
    preview: function () {
      return state.shown ? JSON.parse(JSON.stringify({ data: state.shown.data, query: state.shown.widget.query })) : null;
    },
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
