// The chat of the embed pages: the dashboard's docked agent panel with its launcher bubble, and the
// standalone page /embed/chat (templates/embed/chat.html, body.embed-chat). It posts to the Chat API
// (stream-chat-state, docs/chat-api.md) with the viewer's embed token and reads the NDJSON stream
// line by line. Frames: embedadmin/chat/events.py. Needs common.js (EmbedKit); charts need the vega files.
(function () {
  "use strict";
  var K = window.EmbedKit;
  var h = K.h;

  var TOOL_LABELS = {
    serviceMeta: "Looking up the data model",
    serviceSqlApi: "Querying the data",
  };

  /**
   * options: {session, host, endpoint, docked, title, context: fn -> object|undefined, formatter: fn, container?,
 * launcherContainer?}. Docked: the panel sits beside the content (sticky at the top of the frame, which may be
 * as tall as its content when the host sizes it to `resize`), the launcher where the page puts it.
   */
  function mount(options) {
    var chatId = null;
    var busy = false;
    var docked = !!options.docked;

    var log = h("div.chat-log", { role: "log", "aria-live": "polite" });
    var input = h("textarea.chat-input", { rows: 1, placeholder: "Ask a question about the data", "aria-label": "Question" });
    var send = h("button.primary-button.chat-send", { type: "submit" }, "Ask");
    var form = h("form.chat-form", input, send);
    var close = docked ? h("button.icon-button.chat-close", { type: "button", "aria-label": "Close chat" }, "×") : null;
    var panel = h(
      "aside.chat-panel" + (docked ? ".chat-docked" : ".chat-page"),
      { "aria-label": options.title || "Chat" },
      h("header.chat-head", h("h2.chat-title", options.title || "Ask the data"), close),
      log,
      form
    );
    log.appendChild(h("p.chat-hint", "Ask in plain words, for example: “revenue by month last year”."));

    var launcher = null;
    if (docked) {
      panel.hidden = true;
      launcher = h(
        "button.chat-launcher",
        { type: "button", "aria-label": "Open chat", "aria-expanded": "false" },
        h("span.chat-launcher-icon", { "aria-hidden": "true" }),
        h("span.chat-launcher-text", "Ask AI")
      );
      launcher.addEventListener("click", function () {
        setOpen(panel.hidden);
      });
      close.addEventListener("click", function () {
        setOpen(false);
      });
      (options.launcherContainer || document.body).appendChild(launcher);
    }
    (options.container || document.body).appendChild(panel);

    function setOpen(open) {
      panel.hidden = !open;
      document.body.classList.toggle("chat-open", open);
      if (launcher) launcher.setAttribute("aria-expanded", open ? "true" : "false");
      if (open) input.focus();
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
      turn.appendChild(activity);
      turn.appendChild(answer);
      log.appendChild(turn);
      scrollDown();
      options.host.emit("ai-query", { query: question, status: "submitted", chatId: chatId });

      var body = { input: question, messageId: Date.now() + "-message" };
      if (chatId) body.chatId = chatId;
      var context = options.context && options.context();
      if (context) body.context = context;

      var texts = {}; // message id -> text so far
      var finalText = null;
      var failed = null;

      function showText(text) {
        K.clear(answer);
        K.paragraphs(text).forEach(function (paragraph) {
          answer.appendChild(h("p", paragraph));
        });
        scrollDown();
      }

      // A declined question's way forward: each suggestion is a button that asks it.
      function showSuggestions(questions) {
        var group = h("div.chat-suggestions", { role: "group", "aria-label": "Suggested questions" });
        group.appendChild(h("p", "Did you mean:"));
        questions.forEach(function (suggested) {
          var button = h("button.chat-suggestion", { type: "button" }, suggested);
          button.addEventListener("click", function () {
            ask(suggested);
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
        var result;
        try {
          result = typeof call.result === "string" ? JSON.parse(call.result) : call.result;
        } catch (ignored) {
          return;
        }
        if (!result || !result.vegaSpec || !Array.isArray(result.data) || !result.data.length) return;
        var spec;
        try {
          spec = typeof result.vegaSpec === "string" ? JSON.parse(result.vegaSpec) : result.vegaSpec;
        } catch (ignored) {
          return;
        }
        if (!spec || typeof spec !== "object" || typeof window.vegaEmbed !== "function") return;
        var holder = h("figure.chat-chart");
        if (result.queryTitle) holder.appendChild(h("figcaption", result.queryTitle));
        var target = h("div.chart");
        holder.appendChild(target);
        turn.insertBefore(holder, answer.nextSibling);
        var chart = chartData(spec, result);
        K.embedVega(target, chart.spec, { table: chart.rows }, options.formatter || function () {
          return new K.Formatter();
        }).catch(function () {
          holder.parentNode.removeChild(holder);
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

    return { open: function () { setOpen(true); }, ask: ask };
  }

  /** POST the question and call onFrame with every NDJSON line as it arrives. */
  var NUMERIC_COLUMNS = { Int64: 1, Int32: 1, Double: 1, Decimal: 1, Float: 1, Number: 1 };

  /** A chat result's chart: rows come as arrays beside their `schema` (the SQL API's shape), and column names
   * such as `measure(sales.revenue)` are not Vega field names (dots are paths there). Each column becomes the
   * plain field c0, c1... (numbers as numbers) and the spec's fields that name a column are renamed to it, titled
   * with the column's name unless the spec titles them. */
  function chartData(spec, result) {
    var schema = Array.isArray(result.schema) ? result.schema : [];
    var names = schema.map(function (column) {
      return column && column.name;
    });
    var rows = result.data.map(function (row) {
      var item = {};
      names.forEach(function (name, index) {
        var value = Array.isArray(row) ? row[index] : row && row[name];
        item["c" + index] = NUMERIC_COLUMNS[schema[index].column_type] ? K.numeric(value) : value;
      });
      return item;
    });
    var copy = JSON.parse(JSON.stringify(spec));
    copy.data = { name: "table" };
    var encoding = copy.encoding && typeof copy.encoding === "object" ? copy.encoding : {};
    Object.keys(encoding).forEach(function (channel) {
      var defs = Array.isArray(encoding[channel]) ? encoding[channel] : [encoding[channel]];
      defs.forEach(function (def) {
        if (!def || typeof def !== "object") return;
        var index = names.indexOf(def.field);
        if (index < 0) return;
        if (def.title === undefined) def.title = def.field;
        def.field = "c" + index;
      });
    });
    return { spec: copy, rows: rows };
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

  K.Chat = { mount: mount, stream: stream };
  if (document.body && document.body.classList.contains("embed-chat")) standalone();
})();
