// The panel's dashboard editor (templates/panel/dashboard_editor.html, embedadmin/panel/admin/editor.py).
//
// The draft lives here as the object the Platform API stores (Cube's DashboardConfig); GridStack draws its widgets on
// a grid of the draft's layout.cols columns and rowHeight-pixel rows, and every move or resize is written back into
// the widget's position (x, y, w, h) as GridStack reports it. Settings are edited in forms built from the editor's
// data block: the deployment's reports, its members as /v1/meta describes them, the operators the server's validation
// allows for each member type. "Save draft" sends the whole draft; the server validates it (a refusal names a widget,
// shown on that widget) and stores it. Nothing here decides what is valid: the choices offered only avoid refusals.
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("editor-data").textContent);
  var csrfToken = document.querySelector("input[name=csrfmiddlewaretoken]").value;

  var draft = normalized(data.draft);
  var layout = draft.layout || {};
  var cols = positiveInt(layout.cols, 12);
  var rowHeight = positiveInt(layout.rowHeight, 80);

  var reportsById = {};
  data.reports.forEach(function (report) { reportsById[report.id] = report; });
  var membersByName = {};
  data.entities.forEach(function (entity) {
    entity.members.forEach(function (member) { membersByName[member.name] = member; });
  });

  var KIND_WORDS = {
    CHART: "Report",
    TEXT: "Text",
    FILTER: "Filter",
    DATE_RANGE: "Date range",
    TIME_GRAIN: "Grain",
    FIELD: "Measure switch",
  };
  var DATE_OPERATORS = ["inDateRange", "notInDateRange", "beforeDate", "beforeOrOnDate", "afterDate", "afterOrOnDate", "onTheDate"];

  var grid = null;
  var items = {}; // widget id -> its GridStack element
  var selectedId = null;
  var errors = {}; // widget id -> the server's refusal
  var savedText = canonical(draft);
  var busy = false;

  var els = {
    title: document.getElementById("editor-title"),
    status: document.getElementById("editor-status"),
    published: document.getElementById("editor-published"),
    grid: document.getElementById("editor-grid"),
    empty: document.getElementById("editor-empty"),
    settings: document.getElementById("editor-settings"),
    settingsTitle: document.getElementById("editor-settings-title"),
    form: document.getElementById("editor-settings-form"),
    done: document.getElementById("editor-settings-done"),
    save: document.getElementById("editor-save"),
    publish: document.getElementById("editor-publish"),
    compareButton: document.getElementById("editor-compare-button"),
    compare: document.getElementById("editor-compare"),
    compareTitle: document.getElementById("editor-compare-title"),
    compareIntro: document.getElementById("editor-compare-intro"),
    compareList: document.getElementById("editor-compare-list"),
    toolbarNote: document.getElementById("editor-toolbar-note"),
  };

  // ---------------------------------------------------------------------------------------------------------------
  // Small helpers
  // ---------------------------------------------------------------------------------------------------------------

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) return;
      if (name === "text") el.textContent = value;
      else if (name === "className") el.className = value;
      else if (value === true) el.setAttribute(name, "");
      else el.setAttribute(name, String(value));
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) el.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return el;
  }

  function positiveInt(value, fallback) {
    return Number.isInteger(value) && value > 0 ? value : fallback;
  }

  function normalized(given) {
    var copy = JSON.parse(JSON.stringify(given || {}));
    if (!Array.isArray(copy.widgets)) copy.widgets = [];
    return copy;
  }

  // JSON with sorted keys: two drafts are the same when these are (the database may store keys in another order).
  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map(function (key) {
        return JSON.stringify(key) + ":" + canonical(value[key]);
      }).join(",") + "}";
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  function widgetById(id) {
    for (var i = 0; i < draft.widgets.length; i++) if (draft.widgets[i].id === id) return draft.widgets[i];
    return null;
  }

  function config(widget) {
    if (!widget.config || typeof widget.config !== "object") widget.config = {};
    return widget.config;
  }

  function isDateRange(widget) {
    var operators = config(widget).operators;
    return widget.type === "FILTER" && Array.isArray(operators) && operators.some(function (op) {
      return DATE_OPERATORS.indexOf(op) >= 0;
    });
  }

  function kindOf(widget) {
    return isDateRange(widget) ? "DATE_RANGE" : widget.type;
  }

  function memberTitle(name) {
    var member = membersByName[name];
    return member ? member.title : name || "";
  }

  function reportTitle(report) {
    return report ? report.title || report.name : "";
  }

  function titleOf(widget) {
    var c = config(widget);
    if (widget.type === "CHART") {
      return c.title || reportTitle(reportsById[c.reportId]) || "Choose a report";
    }
    if (widget.type === "TEXT") {
      var first = String(c.text || "").trim().split("\n")[0];
      return first ? shorten(first, 40) : "Empty text";
    }
    return c.label || memberTitle(c.member) || KIND_WORDS[kindOf(widget)];
  }

  // At most ``size`` characters, cut at a word when one ends in the second half.
  function shorten(text, size) {
    if (text.length <= size) return text;
    var cut = text.slice(0, size);
    var space = cut.lastIndexOf(" ");
    return (space > size / 2 ? cut.slice(0, space) : cut) + "…";
  }

  function operatorWord(op) {
    return data.operatorWords[op] || op;
  }

  function grainTitle(member, grain) {
    var found = (member && member.grains || []).filter(function (g) { return g.name === grain; })[0];
    return found ? found.title : grain;
  }

  // The ranges a date range offers are the server's (the semantic layer's date parser reads them): {value, label}.
  function presetTitle(value) {
    var found = data.datePresets.filter(function (p) { return p.value === value; })[0];
    return found ? found.label : value;
  }

  function detailOf(widget) {
    var c = config(widget);
    var member = membersByName[c.member];
    switch (kindOf(widget)) {
      case "CHART": {
        // The kind is in the card's head; the report's name only when the widget has a title of its own.
        var report = reportsById[c.reportId];
        if (!report) return "No report";
        return report.name !== titleOf(widget) ? "Report: " + report.name : "";
      }
      case "TEXT":
        return "";
      case "FILTER": {
        var ops = (c.operators || ["equals"]).map(operatorWord).join(", ");
        return memberTitle(c.member) + " · " + ops;
      }
      case "DATE_RANGE":
        return memberTitle(c.member) + (defaultRangeText(c.defaultValue) ? " · " + defaultRangeText(c.defaultValue) : "");
      case "TIME_GRAIN":
        return memberTitle(c.member) + " · " + (c.grains || []).map(function (g) { return grainTitle(member, g); }).join(", ");
      case "FIELD":
        return (c.alternatives || [c.member]).map(memberTitle).join(" / ");
    }
    return "";
  }

  function defaultRangeText(value) {
    var values = value && typeof value === "object" && !Array.isArray(value) ? value.values || [value.value] : value;
    if (Array.isArray(values) && values.length === 2) return values[0] + " to " + values[1];
    if (Array.isArray(values) && values.length === 1) return presetTitle(values[0]);
    if (typeof values === "string") return presetTitle(values);
    return "";
  }

  function membersWhere(test) {
    return data.entities.map(function (entity) {
      return { title: entity.title, members: entity.members.filter(test) };
    }).filter(function (group) { return group.members.length; });
  }

  var PICKS = {
    FILTER: function (m) { return m.kind === "dimension" && m.type !== "time"; },
    DATE_RANGE: function (m) { return m.kind === "dimension" && m.type === "time"; },
    TIME_GRAIN: function (m) { return m.kind === "dimension" && m.type === "time"; },
    FIELD: function (m) { return m.kind === "measure"; },
  };

  function firstMember(kind) {
    var groups = membersWhere(PICKS[kind]);
    return groups.length ? groups[0].members[0] : null;
  }

  // How big a new report starts: a KPI small, a chart or a table wider and taller.
  function reportSize(report) {
    return report && report.kind === "KPI" ? { w: 3, h: 2 } : { w: 6, h: 4 };
  }

  function freshId(type) {
    var base = type.toLowerCase();
    for (var n = 1; ; n++) if (!widgetById(base + "-" + n)) return base + "-" + n;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Status
  // ---------------------------------------------------------------------------------------------------------------

  function isDirty() {
    return canonical(draft) !== savedText;
  }

  function setStatus(text, tone) {
    els.status.textContent = text;
    els.status.className = "editor-status" + (tone ? " editor-status-" + tone : "");
  }

  function changed() {
    if (isDirty()) setStatus("Unsaved changes", "dirty");
    else if (els.status.classList.contains("editor-status-dirty")) setStatus("All changes saved", "ok");
  }

  function showPublished() {
    var p = data.published;
    els.published.replaceChildren();
    if (!p) {
      els.published.textContent = "Not published yet.";
      return;
    }
    els.published.append(
      "Published version " + p.versionNumber + " (" + p.publishedAt + (p.publishedBy ? ", by " + p.publishedBy : "") + "). ",
      h("a", { href: p.previewUrl, text: "Preview as viewer" }),
      " · ",
      h("a", { href: data.urls.embedAccess, text: "Embed access" })
    );
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The grid
  // ---------------------------------------------------------------------------------------------------------------

  // A faint sketch of what a report draws (decorative: the card's words say what it is).
  var SVG_NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, children) {
    var el = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs).forEach(function (name) { el.setAttribute(name, String(attrs[name])); });
    (children || []).forEach(function (child) { el.appendChild(child); });
    return el;
  }

  function sketch(report) {
    var kind = report ? report.kind : "";
    var fit = kind === "Pie chart" || kind === "KPI" ? "xMidYMid meet" : "none";
    var shapes = [];
    if (kind === "Bar chart") {
      [22, 34, 16, 28, 38, 12, 26].forEach(function (height, i) {
        shapes.push(svg("rect", { x: 4 + i * 13.5, y: 40 - height, width: 9, height: height, rx: 1 }));
      });
    } else if (kind === "Area chart") {
      shapes.push(svg("polygon", { points: "0,40 0,30 15,24 30,27 45,16 60,20 75,9 90,13 100,6 100,40" }));
    } else if (kind === "Line chart" || kind === "Chart" || kind === "Scatter") {
      shapes.push(svg("polyline", { points: "0,32 15,26 30,29 45,17 60,22 75,10 90,14 100,6", fill: "none", "stroke-width": 2, stroke: "currentColor", "vector-effect": "non-scaling-stroke" }));
    } else if (kind === "Pie chart") {
      shapes.push(svg("circle", { cx: 50, cy: 20, r: 18 }));
    } else if (kind === "Table" || kind === "Pivot table") {
      for (var row = 0; row < 5; row++) shapes.push(svg("rect", { x: 0, y: row * 8 + 1, width: 100, height: row ? 3 : 5 }));
    } else if (kind === "KPI") {
      shapes.push(svg("text", { x: 50, y: 30, "text-anchor": "middle", "font-size": 26, "font-weight": 700 }, [document.createTextNode("123")]));
    } else {
      return null;
    }
    return svg("svg", { class: "editor-sketch", viewBox: "0 0 100 40", preserveAspectRatio: fit, "aria-hidden": "true", focusable: "false" }, shapes);
  }

  // The card's element is GridStack's drag handle (bound when the widget was made): only its contents are redrawn.
  function renderCard(widget) {
    var item = items[widget.id];
    if (!item) return;
    var content = item.querySelector(".grid-stack-item-content");
    var kind = kindOf(widget);
    var title = titleOf(widget);
    var kindText = KIND_WORDS[kind];
    if (kind === "CHART" && reportsById[config(widget).reportId]) kindText += " · " + reportsById[config(widget).reportId].kind;
    content.className = "grid-stack-item-content editor-card editor-card-" + kind.toLowerCase().replace("_", "-") +
      (selectedId === widget.id ? " editor-card-selected" : "") + (errors[widget.id] ? " editor-card-refused" : "");
    content.setAttribute("role", "group");
    content.setAttribute("aria-label", title);
    content.setAttribute("data-widget-id", widget.id);
    content.replaceChildren.apply(content, [
      h("div", { className: "editor-card-head" }, [
        h("span", { className: "editor-card-kind", text: kindText }),
        h("span", { className: "editor-card-buttons" }, [
          h("button", { type: "button", className: "editor-card-edit", text: "Edit" }),
          h("button", { type: "button", className: "editor-card-remove", text: "Remove" }),
        ]),
      ]),
      h("div", { className: "editor-card-title", text: title }),
      detailOf(widget) ? h("div", { className: "editor-card-detail", text: detailOf(widget) }) : null,
      widget.type === "TEXT" && String(config(widget).text || "").trim() !== title
        ? h("div", { className: "editor-card-body", text: String(config(widget).text || "").trim() }) : null,
      errors[widget.id] ? h("p", { className: "editor-card-error", role: "alert", text: errors[widget.id] }) : null,
      widget.type === "CHART" ? sketch(reportsById[config(widget).reportId]) : null,
    ].filter(Boolean));
    content.querySelector(".editor-card-edit").addEventListener("click", function () { select(widget.id); });
    content.querySelector(".editor-card-remove").addEventListener("click", function () { remove(widget.id); });
  }

  function addToGrid(widget, autoPosition) {
    var content = h("div", { className: "grid-stack-item-content" });
    content.addEventListener("dblclick", function () { select(widget.id); });
    var item = h("div", { className: "grid-stack-item" }, [content]);
    items[widget.id] = item;
    renderCard(widget);
    els.grid.appendChild(item);
    var p = widget.position || {};
    var options = { id: widget.id, w: positiveInt(p.w, 1), h: positiveInt(p.h, 1) };
    if (autoPosition) options.autoPosition = true;
    else {
      options.x = Number.isInteger(p.x) ? p.x : 0;
      options.y = Number.isInteger(p.y) ? p.y : 0;
    }
    grid.makeWidget(item, options);
    return item;
  }

  // Every widget's position as GridStack holds it: what a move or resize changed.
  function readPositions() {
    draft.widgets.forEach(function (widget) {
      var node = items[widget.id] && items[widget.id].gridstackNode;
      if (node) widget.position = { x: node.x, y: node.y, w: node.w, h: node.h };
    });
  }

  function updateEmpty() {
    els.empty.hidden = draft.widgets.length > 0;
  }

  function buildGrid() {
    grid = GridStack.init({
      column: cols,
      cellHeight: rowHeight,
      margin: 5,
      mode: "float", // widgets stay where they are put: positions round-trip exactly
      animate: false,
      minRow: 4,
      alwaysShowResizeHandle: true,
      // The corner only: an edge handle along a one-row control would be where a person grabs it to move it.
      resizable: { handles: "se" },
    }, els.grid);
    grid.batchUpdate();
    draft.widgets.forEach(function (widget) { addToGrid(widget, false); });
    grid.batchUpdate(false);
    var before = canonical(draft.widgets.map(function (w) { return w.position; }));
    readPositions();
    if (canonical(draft.widgets.map(function (w) { return w.position; })) !== before) {
      // Only overlapping widgets move on load; say so, and let the person save the tidied layout.
      setStatus("Some widgets overlapped and were moved apart: save the draft to keep this layout.", "dirty");
    }
    grid.on("change", function () {
      readPositions();
      if (selectedId) syncPositionFields();
      changed();
    });
    updateEmpty();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Adding and removing
  // ---------------------------------------------------------------------------------------------------------------

  function newWidget(what) {
    var member;
    switch (what) {
      case "report": {
        var report = data.reports[0];
        return { id: freshId("CHART"), type: "CHART", position: reportSize(report), config: { reportId: report.id } };
      }
      case "text":
        return { id: freshId("TEXT"), type: "TEXT", position: { w: 6, h: 2 }, config: { text: "" } };
      case "filter":
        member = firstMember("FILTER");
        return {
          id: freshId("FILTER"), type: "FILTER", position: { w: 3, h: 1 },
          config: { member: member.name, label: member.title, operators: [member.operators[0]], multiple: true },
        };
      case "date range":
        member = firstMember("DATE_RANGE");
        return {
          id: freshId("FILTER"), type: "FILTER", position: { w: 3, h: 1 },
          config: { member: member.name, label: member.title, operators: ["inDateRange"] },
        };
      case "grain": {
        member = firstMember("TIME_GRAIN");
        var offered = member.grains.map(function (g) { return g.name; });
        var grains = ["week", "month", "quarter", "year"].filter(function (g) { return offered.indexOf(g) >= 0; });
        return {
          id: freshId("TIME_GRAIN"), type: "TIME_GRAIN", position: { w: 2, h: 1 },
          config: { member: member.name, label: "Grain", grains: grains, defaultGrain: grains.indexOf("month") >= 0 ? "month" : grains[0] },
        };
      }
      case "measure switch":
        member = firstMember("FIELD");
        return {
          id: freshId("FIELD"), type: "FIELD", position: { w: 2, h: 1 },
          config: { member: member.name, label: "Measure", alternatives: [member.name] },
        };
    }
    return null;
  }

  function add(what) {
    var widget = newWidget(what);
    draft.widgets.push(widget);
    addToGrid(widget, true);
    readPositions();
    updateEmpty();
    changed();
    select(widget.id);
    items[widget.id].scrollIntoView({ block: "nearest" });
  }

  function remove(id) {
    var item = items[id];
    if (item) grid.removeWidget(item, true, false);
    delete items[id];
    delete errors[id];
    draft.widgets = draft.widgets.filter(function (w) { return w.id !== id; });
    if (selectedId === id) closeSettings();
    updateEmpty();
    changed();
  }

  function canAdd(what) {
    if (what === "report") return data.reports.length ? null : "This deployment has no reports yet.";
    if (what === "text") return null;
    if (!data.entities.length) return data.modelError || "The deployment's data model has no members.";
    var kind = { filter: "FILTER", "date range": "DATE_RANGE", grain: "TIME_GRAIN", "measure switch": "FIELD" }[what];
    return firstMember(kind) ? null : "The data model has no member for a " + what + ".";
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The settings form of the selected widget
  // ---------------------------------------------------------------------------------------------------------------

  // One form is open at a time: a field's id is its label's (stable when the form is rebuilt, so focus comes back).
  function field(label, control, help) {
    var id = "editor-field-" + label.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    control.id = id;
    return h("div", { className: "editor-field" }, [
      h("label", { for: id, text: label }),
      control,
      help ? h("p", { className: "editor-help", text: help }) : null,
    ]);
  }

  // A group of checkboxes; ``locked``: the one value always chosen (shown checked, not changeable).
  function checkboxes(legend, options, chosen, onChange, help, locked) {
    var box = h("fieldset", { className: "editor-checkboxes" }, [h("legend", { text: legend })]);
    options.forEach(function (option) {
      var isLocked = locked !== undefined && option[0] === locked;
      var input = h("input", { type: "checkbox", value: option[0], checked: isLocked || chosen.indexOf(option[0]) >= 0, disabled: isLocked });
      input.addEventListener("change", function () {
        onChange(Array.prototype.filter.call(box.querySelectorAll("input"), function (i) { return i.checked; })
          .map(function (i) { return i.value; }));
      });
      box.appendChild(h("label", { className: "editor-check" }, [input, " " + option[1]]));
    });
    if (help) box.appendChild(h("p", { className: "editor-help", text: help }));
    return box;
  }

  // A select of [value, label] options, or of groups {title, options} (members: {title, members}).
  function select_(options, value, onChange, groups) {
    var el = h("select");
    if (groups) {
      groups.forEach(function (group) {
        var optgroup = h("optgroup", { label: group.title });
        var choices = group.options || group.members.map(function (m) { return [m.name, m.title]; });
        choices.forEach(function (o) {
          optgroup.appendChild(h("option", { value: o[0], text: o[1], selected: String(o[0]) === String(value) }));
        });
        el.appendChild(optgroup);
      });
    } else {
      options.forEach(function (o) {
        el.appendChild(h("option", { value: o[0], text: o[1], selected: String(o[0]) === String(value) }));
      });
    }
    el.addEventListener("change", function () { onChange(el.value); });
    return el;
  }

  function fillOptions(select, options, value) {
    select.replaceChildren.apply(select, options.map(function (o) {
      return h("option", { value: o[0], text: o[1], selected: String(o[0]) === String(value) });
    }));
  }

  function textInput(value, onInput, placeholder) {
    var el = h("input", { type: "text", value: value || "", placeholder: placeholder || null, autocomplete: "off" });
    el.addEventListener("input", function () { onInput(el.value); });
    return el;
  }

  // A setting changed: the card shows it, the draft is unsaved, and the form is rebuilt when the choices depend on it.
  function apply(widget, rebuild) {
    delete errors[widget.id];
    renderCard(widget);
    changed();
    if (rebuild) openSettings(widget);
  }

  function setOrDelete(c, key, value) {
    if (value === "" || value === null || value === undefined) delete c[key];
    else c[key] = value;
  }

  function titleField(widget, label, placeholder) {
    var c = config(widget);
    var key = widget.type === "CHART" ? "title" : "label";
    return field(label || "Title", textInput(c[key], function (value) {
      setOrDelete(c, key, value.trim() ? value : "");
      apply(widget, false);
    }, placeholder));
  }

  function memberField(widget, kind, help) {
    var c = config(widget);
    return field("Member", select_(null, c.member, function (value) {
      var previous = membersByName[c.member];
      c.member = value;
      var member = membersByName[value];
      if (!c.label || (previous && c.label === previous.title)) c.label = member.title;
      if (kind === "FILTER") {
        var allowed = member.operators || ["equals"];
        c.operators = (c.operators || []).filter(function (op) { return allowed.indexOf(op) >= 0; });
        if (!c.operators.length) c.operators = [allowed[0]];
        delete c.defaultValue;
      } else if (kind === "TIME_GRAIN") {
        var names = member.grains.map(function (g) { return g.name; });
        c.grains = (c.grains || []).filter(function (g) { return names.indexOf(g) >= 0; });
        if (c.defaultGrain && c.grains.indexOf(c.defaultGrain) < 0) delete c.defaultGrain;
      } else if (kind === "FIELD") {
        var alternatives = (c.alternatives || []).filter(function (m) { return m !== (previous && previous.name); });
        c.alternatives = [value].concat(alternatives.filter(function (m) { return m !== value; }));
      }
      apply(widget, true);
    }, membersWhere(PICKS[kind])), help);
  }

  function visibilityField(widget) {
    var c = config(widget);
    return field("Visibility", select_(data.visibilities, c.visibility || "visible", function (value) {
      setOrDelete(c, "visibility", value === "visible" ? "" : value);
      apply(widget, false);
    }));
  }

  function chartFields(widget) {
    var c = config(widget);
    var groups = [];
    data.reports.forEach(function (r) {
      var title = r.workbook || "No workbook";
      var group = groups.filter(function (g) { return g.title === title; })[0];
      if (!group) groups.push(group = { title: title, options: [] });
      group.options.push([r.id, r.name + " (" + r.kind + ")"]);
    });
    groups.sort(function (a, b) { return a.title.localeCompare(b.title); });
    return [
      field("Report", select_(null, c.reportId, function (value) {
        var before = reportSize(reportsById[c.reportId]);
        var after = reportSize(reportsById[Number(value)]);
        c.reportId = Number(value);
        // A widget still at the size its first report gave it takes the size of the one chosen instead.
        if (widget.position.w === before.w && widget.position.h === before.h && before.w !== after.w) {
          grid.update(items[widget.id], after);
          readPositions();
        }
        apply(widget, true);
      }, groups)),
      titleField(widget, "Title", reportTitle(reportsById[c.reportId]) || ""),
    ];
  }

  function textFields(widget) {
    var c = config(widget);
    var area = h("textarea", { rows: 6 });
    area.value = c.text || "";
    area.addEventListener("input", function () {
      c.text = area.value;
      apply(widget, false);
    });
    return [field("Text", area, "Plain text; a blank line starts a new paragraph.")];
  }

  function filterDefault(c) {
    var value = c.defaultValue;
    if (value === null || value === undefined) return { operator: (c.operators || ["equals"])[0], values: [] };
    if (typeof value === "object" && !Array.isArray(value)) {
      return { operator: value.operator || (c.operators || ["equals"])[0], values: value.values || (value.value !== undefined ? [value.value] : []) };
    }
    return { operator: (c.operators || ["equals"])[0], values: Array.isArray(value) ? value : [value] };
  }

  function filterFields(widget) {
    var c = config(widget);
    var member = membersByName[c.member] || {};
    var allowed = member.operators || ["equals"];
    var chosen = c.operators || ["equals"];
    var fallback = filterDefault(c);
    var valueless = ["set", "notSet"];
    var values = h("textarea", { rows: 3 });
    values.value = fallback.values.join("\n");
    function writeDefault(operator, lines) {
      var list = lines.map(function (v) { return v.trim(); }).filter(Boolean);
      if (valueless.indexOf(operator) >= 0) c.defaultValue = { operator: operator };
      else if (list.length) c.defaultValue = { operator: operator, values: c.multiple === false ? list.slice(0, 1) : list };
      else delete c.defaultValue;
      apply(widget, false);
    }
    var operatorSelect = select_(chosen.map(function (op) { return [op, operatorWord(op)]; }), fallback.operator, function (op) {
      writeDefault(op, values.value.split("\n"));
    });
    values.addEventListener("input", function () { writeDefault(operatorSelect.value, values.value.split("\n")); });
    var several = h("input", { type: "checkbox", checked: c.multiple !== false });
    several.addEventListener("change", function () {
      c.multiple = several.checked;
      apply(widget, false);
    });
    return [
      titleField(widget),
      memberField(widget, "FILTER"),
      checkboxes("Operators", allowed.map(function (op) { return [op, operatorWord(op)]; }), chosen, function (list) {
        c.operators = list;
        if (c.defaultValue && c.defaultValue.operator && list.indexOf(c.defaultValue.operator) < 0) {
          delete c.defaultValue;
          values.value = "";
        }
        fillOptions(operatorSelect, list.map(function (op) { return [op, operatorWord(op)]; }), filterDefault(c).operator);
        apply(widget, false);
      }, "What a viewer may choose, for this member's type."),
      h("div", { className: "editor-field editor-field-check" }, [
        h("label", {}, [several, " Allow several values"]),
      ]),
      field("Default operator", operatorSelect),
      field("Default values", values, "One value a line; none: the filter starts empty."),
      visibilityField(widget),
    ];
  }

  function dateRangeFields(widget) {
    var c = config(widget);
    var current = filterDefault(c).values;
    var custom = current.length === 2;
    var known = data.datePresets.map(function (p) { return [p.value, p.label]; });
    // A range written elsewhere (YAML, the Platform API) that the list does not offer is kept, as written.
    if (!custom && current[0] && !known.some(function (p) { return p[0] === current[0]; })) known.push([current[0], current[0]]);
    var presets = [["", "All time"]].concat(known, [["custom", "Between two dates"]]);
    var from = h("input", { type: "date", value: custom ? current[0] : null });
    var to = h("input", { type: "date", value: custom ? current[1] : null });
    var range = select_(presets, custom ? "custom" : current[0] || "", function (value) {
      dates.hidden = value !== "custom";
      if (value === "custom") writeCustom();
      else if (value) c.defaultValue = { operator: "inDateRange", values: [value] };
      else delete c.defaultValue;
      apply(widget, false);
    });
    function writeCustom() {
      if (from.value && to.value) c.defaultValue = { operator: "inDateRange", values: [from.value, to.value] };
      else delete c.defaultValue;
    }
    [from, to].forEach(function (input) {
      input.addEventListener("change", function () { writeCustom(); apply(widget, false); });
    });
    var dates = h("div", { className: "editor-dates", hidden: !custom }, [field("From", from), field("To", to)]);
    return [titleField(widget), memberField(widget, "DATE_RANGE"), field("Default range", range), dates, visibilityField(widget)];
  }

  function grainFields(widget) {
    var c = config(widget);
    var member = membersByName[c.member] || { grains: [] };
    var chosen = c.grains || [];
    function defaults(list) {
      return [["", "None (the reports' own)"]].concat(list.map(function (g) { return [g, grainTitle(member, g)]; }));
    }
    var defaultSelect = select_(defaults(chosen), c.defaultGrain || "", function (value) {
      setOrDelete(c, "defaultGrain", value);
      apply(widget, false);
    });
    return [
      titleField(widget),
      memberField(widget, "TIME_GRAIN", "The time dimension whose grain the viewer switches, in the reports that group by it."),
      checkboxes("Grains", member.grains.map(function (g) { return [g.name, g.title]; }), chosen, function (list) {
        c.grains = list;
        if (c.defaultGrain && list.indexOf(c.defaultGrain) < 0) delete c.defaultGrain;
        fillOptions(defaultSelect, defaults(list), c.defaultGrain || "");
        apply(widget, false);
      }),
      field("Default grain", defaultSelect),
      visibilityField(widget),
    ];
  }

  function fieldSwitchFields(widget) {
    var c = config(widget);
    var measures = membersWhere(PICKS.FIELD);
    var options = [];
    measures.forEach(function (group) {
      group.members.forEach(function (m) { options.push([m.name, m.title + " (" + group.title + ")"]); });
    });
    return [
      titleField(widget),
      memberField(widget, "FIELD", "The measure the reports use; the viewer switches it to one of the alternatives."),
      checkboxes("Alternatives", options, c.alternatives || [c.member], function (list) {
        c.alternatives = [c.member].concat(list.filter(function (m) { return m !== c.member; }));
        apply(widget, false);
      }, "The measure itself is always one of them.", c.member),
    ];
  }

  function numberInput(value, min, onChange) {
    var el = h("input", { type: "number", min: min, step: 1, value: value });
    el.addEventListener("change", function () {
      var n = parseInt(el.value, 10);
      if (Number.isInteger(n) && n >= min) onChange(n);
    });
    return el;
  }

  var positionInputs = null;

  function positionFields(widget) {
    var p = widget.position;
    function move(key, value) {
      var opts = {};
      opts[key] = value;
      grid.update(items[widget.id], opts);
      readPositions();
      syncPositionFields();
      changed();
    }
    positionInputs = {
      x: numberInput(p.x + 1, 1, function (n) { move("x", n - 1); }),
      y: numberInput(p.y + 1, 1, function (n) { move("y", n - 1); }),
      w: numberInput(p.w, 1, function (n) { move("w", n); }),
      h: numberInput(p.h, 1, function (n) { move("h", n); }),
    };
    return h("fieldset", { className: "editor-position" }, [
      h("legend", { text: "Position" }),
      h("div", { className: "editor-position-grid" }, [
        field("Column", positionInputs.x),
        field("Row", positionInputs.y),
        field("Width", positionInputs.w),
        field("Height", positionInputs.h),
      ]),
      h("p", { className: "editor-help", text: "Or drag the widget, and its lower right corner to size it. Columns: " + cols + "." }),
    ]);
  }

  function syncPositionFields() {
    var widget = widgetById(selectedId);
    if (!widget || !positionInputs) return;
    var p = widget.position;
    positionInputs.x.value = p.x + 1;
    positionInputs.y.value = p.y + 1;
    positionInputs.w.value = p.w;
    positionInputs.h.value = p.h;
  }

  var FORMS = {
    CHART: chartFields,
    TEXT: textFields,
    FILTER: filterFields,
    DATE_RANGE: dateRangeFields,
    TIME_GRAIN: grainFields,
    FIELD: fieldSwitchFields,
  };

  function openSettings(widget) {
    var kind = kindOf(widget);
    var focused = document.activeElement && els.form.contains(document.activeElement) ? document.activeElement.id : null;
    els.settingsTitle.textContent = KIND_WORDS[kind] + " settings";
    els.form.replaceChildren.apply(els.form, FORMS[kind](widget).concat([positionFields(widget)]));
    els.settings.hidden = false;
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
  }

  function select(id) {
    var previous = selectedId;
    selectedId = id;
    if (previous && widgetById(previous)) renderCard(widgetById(previous));
    var widget = widgetById(id);
    renderCard(widget);
    openSettings(widget);
    var first = els.form.querySelector("input, select, textarea");
    if (first) first.focus();
  }

  function closeSettings() {
    var previous = selectedId;
    selectedId = null;
    positionInputs = null;
    els.settings.hidden = true;
    els.form.replaceChildren();
    if (previous && widgetById(previous)) renderCard(widgetById(previous));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Save, publish, compare
  // ---------------------------------------------------------------------------------------------------------------

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken },
      credentials: "same-origin",
      body: JSON.stringify(body),
    }).then(function (response) {
      if (response.redirected) {
        // The panel sent the call to its login page: the session ended. Nothing was written.
        return { ok: false, status: 401, body: { error: "you are no longer logged in to the panel: log in again in another tab, then try again" } };
      }
      return response.json().catch(function () { return { error: "the server answered " + response.status }; })
        .then(function (answer) { return { ok: response.ok, status: response.status, body: answer }; });
    }, function () {
      return { ok: false, status: 0, body: { error: "the server could not be reached" } };
    });
  }

  function setBusy(on) {
    busy = on;
    [els.save, els.publish, els.compareButton].forEach(function (b) { if (b) b.disabled = on; });
  }

  function save() {
    readPositions();
    draft.title = els.title.value;
    setBusy(true);
    setStatus("Saving…");
    var sent = canonical(draft);
    return post(data.urls.save, { draft: draft }).then(function (answer) {
      setBusy(false);
      var before = Object.keys(errors);
      errors = {};
      before.forEach(function (id) { if (widgetById(id)) renderCard(widgetById(id)); });
      if (!answer.ok) {
        var refused = answer.body.widgetId && widgetById(answer.body.widgetId);
        if (refused) {
          errors[refused.id] = answer.body.error;
          renderCard(refused);
          items[refused.id].scrollIntoView({ block: "nearest" });
          setStatus("Not saved: " + KIND_WORDS[kindOf(refused)].toLowerCase() + " “" + titleOf(refused) + "”: " + answer.body.error, "error");
        } else {
          setStatus("Not saved: " + answer.body.error, "error");
        }
        return false;
      }
      if (canonical(answer.body.draft) !== sent) {
        // The server stored the draft in its own terms (ids given, reports by id): show what it stored.
        draft = normalized(answer.body.draft);
        rebuild();
      }
      savedText = canonical(draft);
      data.draftSaved = true;
      setStatus(isDirty() ? "Saved, with changes made since" : answer.body.message, "ok");
      return true;
    });
  }

  function publish() {
    var ready = isDirty() || !data.draftSaved ? save() : Promise.resolve(true);
    return ready.then(function (saved) {
      if (!saved) return;
      setBusy(true);
      setStatus("Publishing…");
      return post(data.urls.publish, {}).then(function (answer) {
        setBusy(false);
        if (!answer.ok) {
          setStatus("Not published: " + answer.body.error, "error");
          return;
        }
        data.published = answer.body.published;
        showPublished();
        setStatus(answer.body.message, "ok");
      });
    });
  }

  function compare() {
    readPositions();
    draft.title = els.title.value;
    setBusy(true);
    return post(data.urls.compare, { draft: draft }).then(function (answer) {
      setBusy(false);
      if (!answer.ok) {
        setStatus("Cannot compare: " + answer.body.error, "error");
        return;
      }
      var published = answer.body.published;
      var differences = answer.body.differences;
      els.compareTitle.textContent = published ? "Changes since version " + published.versionNumber : "Not published yet";
      var intro = published
        ? "What viewers would see change if this draft were published (version " + published.versionNumber + ", " + published.publishedAt + ")."
        : "Nothing is published: publishing shows viewers every widget below.";
      if (isDirty()) intro += " Includes changes not saved yet.";
      els.compareIntro.textContent = intro;
      els.compareList.replaceChildren();
      if (!differences.length) {
        els.compareList.appendChild(h("li", { className: "editor-change-none", text: "No changes: the draft is what viewers see." }));
      }
      differences.forEach(function (d) {
        els.compareList.appendChild(h("li", { className: "editor-change editor-change-" + d.change }, [
          h("span", { className: "editor-change-tag", text: CHANGE_WORDS[d.change] || d.change }),
          " " + d.text,
        ]));
      });
      els.compare.showModal();
    });
  }

  var CHANGE_WORDS = {
    added: "Added",
    removed: "Removed",
    moved: "Moved",
    resized: "Resized",
    retitled: "Retitled",
    report: "Report",
    settings: "Settings",
    dashboard: "Dashboard",
    "report-edited": "Report edited",
  };

  function rebuild() {
    var keep = selectedId;
    closeSettings();
    grid.removeAll(true, false);
    items = {};
    grid.batchUpdate();
    draft.widgets.forEach(function (widget) { addToGrid(widget, false); });
    grid.batchUpdate(false);
    els.title.value = draft.title || "";
    updateEmpty();
    if (keep && widgetById(keep)) select(keep);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------------------------------

  els.title.value = draft.title || "";
  els.title.addEventListener("input", function () {
    draft.title = els.title.value;
    changed();
  });
  Array.prototype.forEach.call(document.querySelectorAll(".editor-add"), function (button) {
    var what = button.getAttribute("data-add");
    var refusal = canAdd(what);
    if (refusal) {
      button.disabled = true;
      button.title = refusal;
      els.toolbarNote.textContent = refusal;
    }
    button.addEventListener("click", function () { add(what); });
  });
  els.done.addEventListener("click", closeSettings);
  els.save.addEventListener("click", function () { if (!busy) save(); });
  if (els.publish) els.publish.addEventListener("click", function () { if (!busy) publish(); });
  els.compareButton.addEventListener("click", function () { if (!busy) compare(); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && selectedId && !els.compare.open) closeSettings();
  });
  window.addEventListener("beforeunload", function (event) {
    if (isDirty()) event.preventDefault();
  });
  buildGrid();
  showPublished();
  if (!els.status.textContent && !data.draftSaved) setStatus("A new draft: nothing saved yet.", "dirty");
  document.body.setAttribute("data-editor-ready", "true");
})();
