// The chat of the embed pages: the dashboard's agent panel (an overlay over the dashboard, resizable, opened by its
// launcher) and the standalone page /embed/chat (templates/embed/chat.html, body.embed-chat). It posts to the Chat API
// (stream-chat-state, docs/chat-api.md) with the viewer's embed token and reads the NDJSON stream line by line.
// Frames: embedadmin/chat/events.py. Answers are shown as formatted text (a small Markdown subset turned into DOM
// nodes, never HTML), their query's rows as a chart or a table, numbers by common.js's Formatter as the tiles show
// them. Needs common.js (EmbedKit); charts need the vega files.
(function () {
  "use strict";
  var K = window.EmbedKit;
  var h = K.h;

  var TOOL_LABELS = {
    serviceMeta: "Looking up the data model",
    serviceSqlApi: "Querying the data",
  };
  var PANEL_WIDTH = { initial: 420, min: 320, max: 760, step: 40 };
  var panels = 0; // ids of the panels on the page

  /**
   * options: {session, host, endpoint, docked, title, context: fn -> object|undefined, formatter: fn, container?,
   * launcherContainer?}. Docked: the panel lies over the dashboard at the frame's right (the grid keeps its width),
   * resizable from its left edge; the launcher opens it where the page puts the launcher, Escape closes it and gives
   * the focus back to the launcher.
   */
  function mount(options) {
    var chatId = null;
    var busy = false;
    var docked = !!options.docked;
    var formatter = options.formatter || function () {
      return new K.Formatter();
    };
    panels += 1;
    var panelId = "chat-panel-" + panels;
    var titleId = panelId + "-title";

    var log = h("div.chat-log", { role: "log", "aria-live": "polite", "aria-label": "Conversation" });
    var input = h("textarea.chat-input", { rows: 1, placeholder: "Ask a question about the data", "aria-label": "Question" });
    var send = h("button.primary-button.chat-send", { type: "submit" }, "Ask");
    var form = h("form.chat-form", input, send);
    var close = docked ? h("button.icon-button.chat-close", { type: "button", "aria-label": "Close chat" }, "×") : null;
    var panel = h(
      "aside.chat-panel" + (docked ? ".chat-docked" : ".chat-page"),
      docked ? { id: panelId, role: "dialog", "aria-modal": "false", "aria-labelledby": titleId } : { "aria-labelledby": titleId },
      h("header.chat-head", h("h2.chat-title", { id: titleId }, options.title || "Ask the data"), close),
      log,
      form
    );
    log.appendChild(h("p.chat-hint", "Ask in plain words, for example: “revenue by month last year”."));

    var launcher = null;
    if (docked) {
      panel.hidden = true;
      panel.insertBefore(resizeHandle(panel), panel.firstChild);
      launcher = h(
        "button.chat-launcher",
        { type: "button", "aria-label": "Open chat", "aria-expanded": "false", "aria-controls": panelId },
        h("span.chat-launcher-icon", { "aria-hidden": "true" }),
        h("span.chat-launcher-text", "Ask AI")
      );
      launcher.addEventListener("click", function () {
        setOpen(panel.hidden);
      });
      close.addEventListener("click", function () {
        setOpen(false);
      });
      panel.addEventListener("keydown", function (event) {
        if (event.key === "Escape" && !event.defaultPrevented) {
          event.preventDefault();
          setOpen(false);
        }
      });
      (options.launcherContainer || document.body).appendChild(launcher);
    }
    (options.container || document.body).appendChild(panel);

    function setOpen(open) {
      var wasOpen = !panel.hidden;
      panel.hidden = !open;
      document.body.classList.toggle("chat-open", open);
      if (!launcher) return;
      launcher.setAttribute("aria-expanded", open ? "true" : "false");
      if (open) input.focus();
      else if (wasOpen) launcher.focus();
    }

    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit ? form.requestSubmit() : submit(event);
      }
    });
    input.addEventListener("input", function () {
      input.style.height = "auto";
      input.style.height = Math.min(input.scrollHeight, 160) + "px";
    });
    form.addEventListener("submit", submit);

    function submit(event) {
      if (event) event.preventDefault();
      var question = input.value.trim();
      if (!question || busy) return;
      input.value = "";
      input.style.height = "auto";
      ask(question);
    }

    function scrollDown() {
      log.scrollTop = log.scrollHeight;
    }

    function ask(question) {
      busy = true;
      send.disabled = true;
      var hint = log.querySelector(".chat-hint");
      if (hint) hint.parentNode.removeChild(hint);
      log.appendChild(h("div.chat-msg.chat-user", h("p", question)));
      var turn = h("div.chat-msg.chat-assistant.is-streaming");
      var activity = h("p.chat-activity", "Thinking…");
      var answer = h("div.chat-answer");
      var results = h("div.chat-results");
      turn.appendChild(activity);
      turn.appendChild(answer);
      turn.appendChild(results);
      log.appendChild(turn);
      scrollDown();
      options.host.emit("ai-query", { query: question, status: "submitted", chatId: chatId });

      var body = { input: question, messageId: Date.now() + "-message" };
      if (chatId) body.chatId = chatId;
      // What the viewer is looking at (a dashboard and its filters) and the locale the page formats in, as a plain
      // language tag: the server writes the answer's numbers and dates in it, as the tiles read them
      // (docs/chat-api.md).
      var context = Object.assign({}, (options.context && options.context()) || {});
      context.locale = K.languageTag(formatter().locale);
      context.timezone = formatter().timezone; // the zone the tiles query in: relative dates are read in it
      body.context = context;

      var texts = {}; // message id -> text so far
      var finalText = null;
      var failed = null;
      var result = null; // the last query result of this answer: {schema, annotation, data, totalRows}

      function showText(text) {
        K.clear(answer);
        answer.appendChild(renderAnswer(text, result, formatter()));
        scrollDown();
      }

      // A declined question's way forward: each suggestion is a button that asks it.
      function showSuggestions(questions) {
        var group = h("div.chat-suggestions", { role: "group", "aria-label": "Suggested questions" });
        group.appendChild(h("p", "Did you mean:"));
        questions.forEach(function (suggested) {
          var button = h("button.chat-suggestion", { type: "button" }, suggested);
          button.addEventListener("click", function () {
            if (!busy) ask(suggested);
          });
          group.appendChild(button);
        });
        answer.appendChild(group);
        scrollDown();
      }

      function onFrame(frame) {
        if (!frame || typeof frame !== "object") return;
        if (frame.jsonrpc && frame.error) {
          failed = (frame.error && frame.error.message) || "The chat refused the question";
          return;
        }
        if (frame.id === "__cutoff__") {
          if (frame.state && frame.state.chatId) chatId = frame.state.chatId;
          return;
        }
        if (frame.id === "__error__" || frame.type === "error" || (frame.error && !frame.id)) {
          failed = frame.error || "The answer failed";
          return;
        }
        if (frame.id === "__aborted__") {
          failed = "The answer was stopped";
          return;
        }
        if (frame.role !== "assistant" || typeof frame.id !== "string" || frame.id.indexOf("__") === 0) return;
        if (frame.toolCall) {
          onTool(frame.toolCall, frame.isInProcess);
          return;
        }
        var path = frame.graphPath || [];
        if (path[0] === "final") {
          finalText = frame.content || "";
          var offered = Array.isArray(frame.suggestions) ? frame.suggestions.filter(function (q) {
            return typeof q === "string" && q;
          }) : [];
          var listed = finalText.indexOf("\n\nDid you mean:");
          showText(offered.length && listed >= 0 ? finalText.slice(0, listed) : finalText);
          if (offered.length) showSuggestions(offered);
          return;
        }
        if (frame.isDelta && frame.content) {
          texts[frame.id] = (texts[frame.id] || "") + frame.content;
          if (finalText === null) showText(texts[frame.id]);
          activity.textContent = "Writing the answer…";
        }
      }

      function onTool(call, inProcess) {
        activity.textContent = (TOOL_LABELS[call.name] || "Working") + (inProcess ? "…" : "");
        if (inProcess || !call.result) return;
        var parsed;
        try {
          parsed = typeof call.result === "string" ? JSON.parse(call.result) : call.result;
        } catch (ignored) {
          return;
        }
        if (!parsed || !Array.isArray(parsed.schema) || !Array.isArray(parsed.data)) return;
        result = parsed;
        if (parsed.data.length) showChart(parsed);
      }

      function showChart(shown) {
        var spec = null;
        try {
          spec = typeof shown.vegaSpec === "string" ? (shown.vegaSpec ? JSON.parse(shown.vegaSpec) : null) : shown.vegaSpec;
        } catch (ignored) {
          spec = null;
        }
        if (!spec || typeof spec !== "object" || Array.isArray(spec)) return;
        var holder = h("figure.chat-chart");
        var caption = typeof spec.title === "string" ? spec.title : shown.queryTitle;
        if (caption) holder.appendChild(h("figcaption", caption));
        var target = h("div.chart");
        holder.appendChild(target);
        results.appendChild(holder);
        var chart = chartData(spec, shown, true);
        K.embedVega(target, chart.spec, { table: chart.rows }, formatter)
          .catch(function () {
            // A page whose Vega has no embedFormat (an older common.js) still draws the chart, with Vega's labels.
            K.clear(target);
            var plain = chartData(spec, shown, false);
            return K.embedVega(target, plain.spec, { table: plain.rows }, formatter);
          })
          .then(function (embedded) {
            holder.vegaView = embedded.view; // read by the browser tests (the chart's scene as SVG)
            embedded.view.addEventListener("mouseout", function () {
              K.hideTooltip();
            });
            scrollDown();
          })
          .catch(function () {
            if (holder.parentNode) holder.parentNode.removeChild(holder);
          });
      }

      stream(options, body, onFrame)
        .then(function () {
          if (failed) throw new Error(failed);
          if (finalText === null && !Object.keys(texts).length) throw new Error("No answer came back");
          turn.classList.remove("is-streaming");
          activity.parentNode && turn.removeChild(activity);
          options.host.emit("ai-query", { query: question, status: "completed", chatId: chatId });
        })
        .catch(function (error) {
          turn.classList.remove("is-streaming");
          turn.classList.add("is-error");
          var ended = K.isSessionEnded(error);
          activity.textContent = ended ? "Session ended" : error.message || "The answer failed";
          options.host.emit("ai-query", { query: question, status: "error", chatId: chatId });
          options.host.error(ended ? "Session ended" : error.message || String(error), error.name || "ChatError", "chat", false);
        })
        .then(function () {
          busy = false;
          send.disabled = false;
          scrollDown();
        });
    }

    return {
      open: function () {
        setOpen(true);
      },
      close: function () {
        setOpen(false);
      },
      ask: ask,
    };
  }

  /** The panel's left edge: drag it (or focus it and press the arrow keys) to widen or narrow the panel. */
  function resizeHandle(panel) {
    var handle = h("div.chat-resize", {
      role: "separator",
      tabindex: "0",
      "aria-orientation": "vertical",
      "aria-label": "Resize chat",
      "aria-valuemin": String(PANEL_WIDTH.min),
      "aria-valuemax": String(PANEL_WIDTH.max),
      "aria-valuenow": String(PANEL_WIDTH.initial),
    });

    function setWidth(width) {
      var widest = Math.max(PANEL_WIDTH.min, Math.min(PANEL_WIDTH.max, window.innerWidth - 48));
      var next = Math.round(Math.max(PANEL_WIDTH.min, Math.min(widest, width)));
      panel.style.width = next + "px";
      handle.setAttribute("aria-valuenow", String(next));
    }

    handle.addEventListener("pointerdown", function (event) {
      event.preventDefault();
      handle.setPointerCapture(event.pointerId);
      panel.classList.add("is-resizing");
      var startX = event.clientX;
      var startWidth = panel.getBoundingClientRect().width;
      function move(moved) {
        setWidth(startWidth + startX - moved.clientX);
      }
      function end() {
        panel.classList.remove("is-resizing");
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", end);
        handle.removeEventListener("pointercancel", end);
        window.dispatchEvent(new Event("resize")); // the answers' charts refit
      }
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", end);
      handle.addEventListener("pointercancel", end);
    });
    handle.addEventListener("keydown", function (event) {
      var width = panel.getBoundingClientRect().width;
      if (event.key === "ArrowLeft") setWidth(width + PANEL_WIDTH.step);
      else if (event.key === "ArrowRight") setWidth(width - PANEL_WIDTH.step);
      else if (event.key === "Home") setWidth(PANEL_WIDTH.min);
      else if (event.key === "End") setWidth(PANEL_WIDTH.max);
      else return;
      event.preventDefault();
      window.dispatchEvent(new Event("resize"));
    });
    return handle;
  }

  // ---------------------------------------------------------------------------------------------
  // Answers as formatted text: a small Markdown subset (paragraphs, lists, tables, headings, code, emphasis),
  // built as DOM nodes from text (the model's text is never parsed as HTML)
  // ---------------------------------------------------------------------------------------------

  var BULLET = /^\s*[-*•]\s+(.*)$/;
  var NUMBERED = /^\s*\d{1,3}[.)]\s+(.*)$/;
  var HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
  var FENCE = /^\s*```/;
  var TABLE_ROW = /^\s*\|.*\|\s*$/;
  var TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
  var NOTE = /^Computed:/; // the built-in analyst's account of what it computed: shown quieter than the answer

  /** An answer's text as DOM nodes. A table whose header names the columns of `result` (the answer's query) is drawn
   * from the result's own values, formatted as the tiles format them. */
  function renderAnswer(text, result, formatter) {
    var out = document.createDocumentFragment();
    var lines = String(text).replace(/\r\n?/g, "\n").split("\n");
    var paragraph = null;
    var list = null;
    var i = 0;

    function endBlocks() {
      paragraph = null;
      list = null;
    }

    while (i < lines.length) {
      var line = lines[i];
      var match;
      if (!line.trim()) {
        endBlocks();
        i += 1;
      } else if (FENCE.test(line)) {
        endBlocks();
        var code = [];
        i += 1;
        while (i < lines.length && !FENCE.test(lines[i])) {
          code.push(lines[i]);
          i += 1;
        }
        i += 1;
        out.appendChild(h("pre.chat-code", h("code", code.join("\n"))));
      } else if (TABLE_ROW.test(line) && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        endBlocks();
        var header = tableCells(line);
        var align = tableCells(lines[i + 1]).map(function (rule) {
          return /:\s*$/.test(rule) ? "right" : "";
        });
        var body = [];
        i += 2;
        while (i < lines.length && TABLE_ROW.test(lines[i])) {
          body.push(tableCells(lines[i]));
          i += 1;
        }
        out.appendChild(resultTable(header, body, result, formatter) || textTable(header, align, body));
      } else if ((match = HEADING.exec(line))) {
        endBlocks();
        out.appendChild(h("h3.chat-heading", inline(match[1])));
        i += 1;
      } else if ((match = BULLET.exec(line)) || (match = NUMBERED.exec(line))) {
        var ordered = !BULLET.test(line);
        paragraph = null;
        if (!list || list.ordered !== ordered) {
          list = { ordered: ordered, node: h(ordered ? "ol.chat-list" : "ul.chat-list") };
          out.appendChild(list.node);
        }
        list.node.appendChild(h("li", inline(match[1])));
        i += 1;
      } else {
        list = null;
        if (!paragraph || NOTE.test(line)) {
          paragraph = h(NOTE.test(line) ? "p.chat-note" : "p");
          out.appendChild(paragraph);
        } else {
          paragraph.appendChild(h("br"));
        }
        K.append(paragraph, [inline(line.trim())]);
        i += 1;
      }
    }
    return out;
  }

  /** The cells of a Markdown table row (`\|` is a pipe inside a cell). */
  function tableCells(line) {
    var cells = [];
    var cell = "";
    var text = line.trim().replace(/^\|/, "").replace(/\|$/, "");
    for (var i = 0; i < text.length; i += 1) {
      if (text[i] === "\\" && text[i + 1] === "|") {
        cell += "|";
        i += 1;
      } else if (text[i] === "|") {
        cells.push(cell.trim());
        cell = "";
      } else cell += text[i];
    }
    cells.push(cell.trim());
    return cells;
  }

  function textTable(header, align, body) {
    var head = h("tr", header.map(function (cell, index) {
      return h("th" + (align[index] ? ".num" : ""), { scope: "col" }, inline(cell));
    }));
    var rows = body.map(function (cells) {
      return h("tr", header.map(function (ignored, index) {
        return h("td" + (align[index] ? ".num" : ""), inline(cells[index] || ""));
      }));
    });
    return h("div.chat-table-wrap", h("table.data-table.chat-table", h("thead", head), h("tbody", rows)));
  }

  /** The answer's table drawn from its query's rows, when the table shows them: its header is the result's column
   * titles, and its text columns read as the rows' values (the first rows, as many as the text lists). Cells are
   * formatted by the columns' formats in the viewer's locale, as the tiles' cells are. */
  function resultTable(header, body, result, formatter) {
    var columns = result && Array.isArray(result.annotation) ? result.annotation : null;
    if (!columns || columns.length !== header.length || body.length > result.data.length) return null;
    var named = columns.every(function (column, index) {
      return column && typeof column.title === "string" && column.title.toLowerCase() === header[index].toLowerCase();
    });
    var rows = result.data.slice(0, body.length);
    var same = rows.every(function (row, r) {
      return columns.every(function (column, c) {
        return column.type !== "string" || row[c] === null || String(row[c]) === body[r][c];
      });
    });
    if (!named || !same) return null;
    var head = h("tr", columns.map(function (column) {
      return h("th" + (column.type === "number" ? ".num" : ""), { scope: "col" }, column.title);
    }));
    var cells = rows.map(function (row) {
      return h("tr", columns.map(function (column, index) {
        var value = row[index];
        var shown = column.type === "number" ? formatter.value(K.numeric(value), column) : formatter.value(value, column);
        return h("td" + (column.type === "number" ? ".num" : ""), shown);
      }));
    });
    return h("div.chat-table-wrap", h("table.data-table.chat-table", h("thead", head), h("tbody", cells)));
  }

  var INLINE = /(\*\*[^*\n]+\*\*|__[^_\n]+__|`[^`\n]+`|\*[^*\s][^*\n]*\*|(?<!\w)_[^_\s][^_\n]*_(?!\w))/;

  /** Emphasis, strong emphasis and code spans of one line, as nodes; everything else as text. */
  function inline(text) {
    var nodes = [];
    var rest = String(text);
    var match;
    while ((match = INLINE.exec(rest))) {
      var token = match[1];
      var start = match.index;
      if (start > 0) nodes.push(rest.slice(0, start));
      if (token.slice(0, 2) === "**" || token.slice(0, 2) === "__") nodes.push(h("strong", inline(token.slice(2, -2))));
      else if (token[0] === "`") nodes.push(h("code", token.slice(1, -1)));
      else nodes.push(h("em", inline(token.slice(1, -1))));
      rest = rest.slice(start + token.length);
    }
    if (rest) nodes.push(rest);
    return nodes;
  }

  // ---------------------------------------------------------------------------------------------
  // The answer's chart
  // ---------------------------------------------------------------------------------------------

  var NUMERIC_COLUMNS = { Int64: 1, Int32: 1, Double: 1, Decimal: 1, Float: 1, Number: 1 };

  /** A chat result's chart: rows come as arrays beside their `schema` (the SQL API's shape), and column names such as
   * `measure(sales.revenue)` are no plain Vega field names. Each column becomes the field c0, c1... (numbers as
   * numbers) and the spec's fields that name a column are renamed to it. The server titles the spec (tools.py
   * `titled_spec`); here each value of a number or time column is formatted by the page's formatter (`embedFormat`,
   * which common.js gives Vega, as for the tiles): axes abbreviate (1.2M), tooltips show the value as a table cell
   * would, time labels read the grain (Jan 2024, Q1 2024). */
  function chartData(spec, result, formatted) {
    var schema = result.schema;
    var columns = Array.isArray(result.annotation) ? result.annotation : [];
    var names = schema.map(function (column) {
      return column && column.name;
    });
    var rows = result.data.map(function (row) {
      var item = {};
      names.forEach(function (name, index) {
        var value = Array.isArray(row) ? row[index] : row && row[name];
        var type = schema[index].column_type;
        item["c" + index] = NUMERIC_COLUMNS[type] ? K.numeric(value) : type === "Timestamp" ? wallTime(value) : value;
      });
      return item;
    });
    var copy = JSON.parse(JSON.stringify(spec));
    copy.data = { name: "table" };
    delete copy.title; // the figure's caption says it
    if (formatted) copy.config = Object.assign({}, copy.config, { customFormatTypes: true });
    var encoding = copy.encoding && typeof copy.encoding === "object" ? copy.encoding : {};
    Object.keys(encoding).forEach(function (channel) {
      var defs = Array.isArray(encoding[channel]) ? encoding[channel] : [encoding[channel]];
      defs.forEach(function (def) {
        if (!def || typeof def !== "object" || typeof def.field !== "string") return;
        var index = names.indexOf(def.field.replace(/\\([.[\]\\])/g, "$1"));
        if (index < 0) return;
        def.field = "c" + index;
        var column = columns[index];
        // The server titles the spec by its columns' titles (tools.py `titled_spec`): a person's words, never a name.
        if (def.title === undefined && column && column.title) def.title = column.title;
        if (formatted && column) dress(channel, def, column);
      });
    });
    return { spec: copy, rows: rows };
  }

  /** A time of the SQL API (a wall-clock time without an offset, in the query's time zone) as Vega reads a time
   * without an offset: in the browser's time zone, which is where the page's formatter reads it back. A field with a
   * custom format is not parsed by Vega-Lite itself. */
  function wallTime(value) {
    if (value === null || value === undefined || value === "") return null;
    var text = String(value).replace(" ", "T");
    var time = new Date(text.length <= 10 ? text + "T00:00:00" : text).getTime();
    return isNaN(time) ? null : time;
  }

  /** A number or time channel formatted by the page's formatter; a quantitative axis abbreviates (1.2M). */
  function dress(channel, def, column) {
    if ((column.type !== "number" && column.type !== "time") || def.format !== undefined || def.formatType) return;
    var format = {};
    ["type", "format", "currency", "granularity"].forEach(function (key) {
      if (column[key] !== undefined) format[key] = column[key];
    });
    def.format = format;
    def.formatType = "embedFormat";
    if ((channel !== "x" && channel !== "y") || def.axis === null) return;
    var axis = Object.assign({}, def.axis || {});
    if (axis.format === undefined && !axis.formatType) {
      axis.format = column.type === "number" && def.type === "quantitative" ? Object.assign({ abbreviate: true }, format) : format;
      axis.formatType = "embedFormat";
    }
    def.axis = axis;
  }

  function stream(options, body, onFrame) {
    return K.request(options.endpoint, {
      method: "POST",
      headers: { Authorization: options.session.embedAuth(), Accept: "application/x-ndjson, application/json" },
      body: body,
      raw: true,
    }).then(function (answer) {
      var response = answer.response;
      var decoder = new TextDecoder();
      var buffer = "";
      function lines(final) {
        var parts = buffer.split("\n");
        buffer = final ? "" : parts.pop();
        parts.forEach(function (line) {
          line = line.trim();
          if (!line) return;
          var frame;
          try {
            frame = JSON.parse(line);
          } catch (ignored) {
            return;
          }
          onFrame(frame);
        });
      }
      if (!response.body || !response.body.getReader) {
        return response.text().then(function (text) {
          buffer = text;
          lines(true);
        });
      }
      var reader = response.body.getReader();
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) {
            buffer += decoder.decode();
            lines(true);
            return;
          }
          buffer += decoder.decode(chunk.value, { stream: true });
          lines(false);
          return pump();
        });
      }
      return pump();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // The standalone chat page (surface "chat"); not affected by showDashboardChat
  // ---------------------------------------------------------------------------------------------

  function standalone() {
    var root = document.getElementById("embed-root");
    var boot;
    try {
      boot = K.readBootstrap();
    } catch (error) {
      root.appendChild(K.errorBox("This chat could not start", error.message));
      return;
    }
    boot.surface = "chat";
    var host = new K.Host(boot);
    var session = new K.Session(boot, host);
    var settings = boot.settings || {};
    var formatter = new K.Formatter(settings.locale, settings.timezone);
    document.documentElement.lang = formatter.locale;
    K.applyTheme(settings.embedTheme);
    host.on("set-theme", K.applyTheme);
    host.on("set-color-scheme", function (payload) {
      K.setScheme(payload.scheme);
    });
    host.on("set-locale", function (payload) {
      var locale = K.usableLocale(payload.locale);
      if (locale) formatter = new K.Formatter(locale, formatter.timezone);
    });
    host.on("set-timezone", function (payload) {
      var timezone = K.usableTimezone(payload.timezone);
      if (timezone) formatter = new K.Formatter(formatter.locale, timezone);
    });
    host.on("set-session", function (payload) {
      session.renew(payload.sessionId);
    });
    host.observeSize(root);
    host.ready(boot);
    host.emit("view", { surface: "chat", path: window.location.pathname, title: boot.title || "Chat" });
    var endpoint = boot.endpoints && boot.endpoints.chat;
    if (!endpoint || settings.allowAi === false) {
      root.appendChild(K.errorBox("Chat is not available", "This session does not include AI chat."));
      return;
    }
    mount({
      session: session,
      host: host,
      endpoint: endpoint,
      docked: false,
      container: root,
      title: boot.title || "Ask the data",
      formatter: function () {
        return formatter;
      },
    });
  }

  K.Chat = { mount: mount, stream: stream, renderAnswer: renderAnswer };
  if (document.body && document.body.classList.contains("embed-chat")) standalone();
})();
