// Shared by the embed pages (dashboard.js, chat.js): the bootstrap, the host messages, the API calls,
// formatting, theme and session renewal. The contract is docs/dashboards.md. No framework, no build step;
// everything lives under window.EmbedKit. The page runs under `script-src 'self'; style-src 'self'`:
// no eval, no inline style (element.style and CSS custom properties set from here are allowed).
(function () {
  "use strict";

  // ---------------------------------------------------------------------------------------------
  // DOM
  // ---------------------------------------------------------------------------------------------

  /** h("div.card.wide", {role: "note", onclick: fn}, child, "text", [more]) -> element. Text is never parsed as HTML. */
  function h(tag, attrs) {
    var parts = tag.split(".");
    var node = document.createElement(parts[0] || "div");
    if (parts.length > 1) node.className = parts.slice(1).join(" ");
    var children = Array.prototype.slice.call(arguments, 2);
    if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
      children.unshift(attrs);
      attrs = null;
    }
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === undefined || value === null || value === false) return;
        if (key.slice(0, 2) === "on" && typeof value === "function") node.addEventListener(key.slice(2), value);
        else if (key === "text") node.textContent = value;
        else if (key === "dataset") Object.assign(node.dataset, value);
        else if (key in node && typeof value !== "string") node[key] = value;
        else node.setAttribute(key, value === true ? "" : String(value));
      });
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    children.forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      if (Array.isArray(child)) append(node, child);
      else node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // ---------------------------------------------------------------------------------------------
  // Bootstrap: read once, remove the element, drop the session from the address bar
  // ---------------------------------------------------------------------------------------------

  function readBootstrap() {
    var element = document.getElementById("embed-bootstrap");
    if (!element) throw new Error("The page has no bootstrap");
    var bootstrap = JSON.parse(element.textContent);
    element.parentNode.removeChild(element);
    scrubUrl();
    return bootstrap;
  }

  function scrubUrl() {
    try {
      var url = new URL(window.location.href);
      var had = url.searchParams.has("session") || url.searchParams.has("sessionId");
      url.searchParams.delete("session");
      url.searchParams.delete("sessionId");
      if (had) window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    } catch (ignored) {
      /* an opaque URL: nothing to drop */
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Session: the token lives in this closure only (never storage, never cookies)
  // ---------------------------------------------------------------------------------------------

  function Session(bootstrap, host) {
    this.bootstrap = bootstrap;
    this.host = host;
    this.token = bootstrap.token;
    this.expiresAt = bootstrap.tokenExpiresAt || null;
    this.renewAt = bootstrap.renewAt || null;
    this.ended = false;
    this.listeners = [];
    this.timer = null;
    delete bootstrap.token;
    this.schedule();
  }

  Session.prototype.onChange = function (listener) {
    this.listeners.push(listener);
  };

  /** Announce `session-expiring` once, at renewAt (or, when the server gave none, a minute before expiry but
   * never sooner than half way through the time the token has left, so a short-lived token is not announced
   * again and again). */
  Session.prototype.schedule = function () {
    var self = this;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    var at = Date.parse(this.renewAt || "");
    if (isNaN(at) && this.expiresAt) {
      var expires = Date.parse(this.expiresAt);
      at = expires - Math.min(60000, Math.max(0, (expires - Date.now()) / 2));
    }
    if (isNaN(at)) return;
    // setTimeout overflows past 2^31 ms; check again later instead.
    var delay = Math.max(0, Math.min(at - Date.now(), 2147483000));
    this.timer = setTimeout(function () {
      if (Date.now() < at - 1000) return self.schedule();
      self.host.emit("session-expiring", { expiresAt: self.expiresAt });
    }, delay);
  };

  /** `set-session {sessionId}`: exchange the new session and swap the token without reloading. */
  Session.prototype.renew = function (sessionId) {
    var self = this;
    var endpoint = this.bootstrap.endpoints && this.bootstrap.endpoints.token;
    if (!endpoint || typeof sessionId !== "string" || !sessionId) {
      this.host.error("set-session needs a sessionId", "SessionRenewalError", "set-session", false);
      return Promise.resolve(false);
    }
    return request(endpoint, { method: "POST", body: { sessionId: sessionId } })
      .then(function (answer) {
        if (!answer.body || typeof answer.body.token !== "string") throw new Error("The token endpoint gave no token");
        self.token = answer.body.token;
        self.expiresAt = answer.body.expiresAt || null;
        // The next announcement: renewAt when the endpoint says, else as schedule() works it out.
        self.renewAt = answer.body.renewAt || null;
        self.ended = false;
        self.schedule();
        self.listeners.forEach(function (listener) {
          listener(self);
        });
        return true;
      })
      .catch(function (error) {
        self.host.error(error.message || String(error), "SessionRenewalError", "set-session", false);
        return false;
      });
  };

  Session.prototype.embedAuth = function () {
    return "Embed-Token " + this.token;
  };

  // ---------------------------------------------------------------------------------------------
  // HTTP
  // ---------------------------------------------------------------------------------------------

  function HttpError(status, message, body) {
    this.name = "HttpError";
    this.status = status;
    this.message = message;
    this.body = body;
  }
  HttpError.prototype = Object.create(Error.prototype);

  /** fetch with JSON in and out; resolves {status, body, response}; rejects HttpError on non-2xx. The embed pages
   * send no cookies; the panel's pages (the report builder) pass `credentials: "same-origin"` with their CSRF
   * header. */
  function request(url, options) {
    options = options || {};
    var headers = Object.assign({ Accept: "application/json" }, options.headers || {});
    var init = {
      method: options.method || "GET",
      headers: headers,
      credentials: options.credentials === "same-origin" ? "same-origin" : "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
      signal: options.signal,
    };
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body);
    }
    return fetch(url, init).then(function (response) {
      if (options.raw && response.ok) return { status: response.status, response: response };
      return response.text().then(function (text) {
        var body = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch (ignored) {
          body = null;
        }
        if (!response.ok) {
          var message = (body && (body.error || body.message || body.detail)) || text || response.statusText;
          if (typeof message !== "string") message = JSON.stringify(message);
          throw new HttpError(response.status, message || "HTTP " + response.status, body);
        }
        return { status: response.status, body: body, response: response };
      });
    });
  }

  function sleep(ms, signal) {
    return new Promise(function (resolve, reject) {
      var timer = setTimeout(resolve, ms);
      if (signal)
        signal.addEventListener("abort", function () {
          clearTimeout(timer);
          reject(abortError());
        });
    });
  }

  function abortError() {
    var error = new Error("aborted");
    error.name = "AbortError";
    return error;
  }

  /** POST {coreApiBase}/load with the raw token; polls while Cube answers {"error": "Continue wait"}. */
  function coreLoad(session, query, signal) {
    var base = session.bootstrap.coreApiBase.replace(/\/$/, "");
    var attempt = 0;
    function once() {
      if (signal && signal.aborted) return Promise.reject(abortError());
      return request(base + "/load", {
        method: "POST",
        headers: { Authorization: session.token },
        body: { query: query },
        signal: signal,
      }).then(function (answer) {
        if (answer.body && answer.body.error === "Continue wait") {
          attempt += 1;
          return sleep(Math.min(150 * attempt, 1000), signal).then(once);
        }
        if (!answer.body || answer.body.error) throw new HttpError(answer.status, (answer.body && answer.body.error) || "No result", answer.body);
        return answer.body;
      });
    }
    return once();
  }

  /** Whether an error means the token no longer works (expired or revoked). */
  function isSessionEnded(error) {
    if (!error || !error.status) return false;
    if (error.status === 401) return true;
    return error.status === 403 && /token|session|expired|revoked/i.test(error.message || "");
  }

  // ---------------------------------------------------------------------------------------------
  // Host messages: one origin, never "*"
  // ---------------------------------------------------------------------------------------------

  function resolveHostOrigin(allowed) {
    allowed = (allowed || []).map(function (origin) {
      try {
        return new URL(origin).origin;
      } catch (ignored) {
        return null;
      }
    });
    var candidates = [];
    if (window.location.ancestorOrigins && window.location.ancestorOrigins.length) {
      candidates.push(window.location.ancestorOrigins[0]);
    }
    if (document.referrer) {
      try {
        candidates.push(new URL(document.referrer).origin);
      } catch (ignored) {
        /* no usable referrer */
      }
    }
    for (var i = 0; i < candidates.length; i += 1) {
      if (allowed.indexOf(candidates[i]) !== -1) return candidates[i];
    }
    return null;
  }

  function Host(bootstrap) {
    this.surface = bootstrap.surface || "dashboard";
    this.origin = window.parent !== window ? resolveHostOrigin(bootstrap.hostOrigins) : null;
    this.handlers = {};
    this.sent = [];
    var self = this;
    window.addEventListener("message", function (event) {
      if (!self.origin || event.origin !== self.origin || event.source !== window.parent) return;
      var data = event.data;
      if (!data || typeof data !== "object" || data.source !== "cube-embed" || data.direction !== "action") return;
      if (typeof data.type !== "string" || data.type.indexOf("cube:action:") !== 0) return;
      var name = data.type.slice("cube:action:".length);
      var handler = self.handlers[name];
      if (!handler) return;
      try {
        handler(data.payload && typeof data.payload === "object" ? data.payload : {});
      } catch (error) {
        self.error(error.message || String(error), error.name, "action:" + name, false);
      }
    });
  }

  Host.prototype.on = function (action, handler) {
    this.handlers[action] = handler;
  };

  Host.prototype.emit = function (event, payload) {
    var message = {
      source: "cube-embed",
      direction: "event",
      type: "cube:event:" + event,
      payload: payload || {},
      timestamp: Date.now(),
      surface: this.surface,
    };
    this.sent.push(message.type);
    if (this.origin) window.parent.postMessage(message, this.origin);
  };

  /** `ready`: the page's viewer as its bootstrap names them, with the surface's own keys (`extra`). */
  Host.prototype.ready = function (bootstrap, extra) {
    var payload = {
      embedTenant: bootstrap.embedTenant || null,
      deploymentId: bootstrap.deploymentId === undefined ? null : bootstrap.deploymentId,
      mode: "signed",
      surface: this.surface,
    };
    this.emit("ready", Object.assign(payload, extra || {}));
  };

  Host.prototype.error = function (message, name, context, fatal) {
    this.emit("error", { message: message, name: name || "Error", context: context || "embed", fatal: !!fatal });
  };

  /** `resize {height, width}` from the content root's own size (not the frame's: no feedback loop). */
  Host.prototype.observeSize = function (root) {
    var self = this;
    var last = "";
    if (typeof ResizeObserver === "undefined") return;
    new ResizeObserver(function () {
      var rect = root.getBoundingClientRect();
      var size = { height: Math.ceil(root.scrollHeight || rect.height), width: Math.ceil(rect.width) };
      var key = size.height + "x" + size.width;
      if (key === last || !size.height) return;
      last = key;
      self.emit("resize", size);
    }).observe(root);
  };

  // ---------------------------------------------------------------------------------------------
  // Formatting: numbers per member format, dates in the viewer's time zone
  // ---------------------------------------------------------------------------------------------

  /** ``locale`` in its canonical form (``DE-de`` -> ``de-DE``) when Intl formats numbers in it, else null. */
  function usableLocale(locale) {
    try {
      return Intl.NumberFormat.supportedLocalesOf([locale]).length ? Intl.getCanonicalLocales(locale)[0] : null;
    } catch (ignored) {
      return null;
    }
  }

  /** A usable locale's language, script and region, without its variants, extensions and private use
   * (``de-DE-u-nu-latn`` -> ``de-DE``, ``en-US-posix`` -> ``en-US``): the tag the server formats an answer's values in
   * (docs/chat-api.md). */
  function languageTag(locale) {
    try {
      var tag = new Intl.Locale(locale);
      return [tag.language, tag.script, tag.region].filter(Boolean).join("-");
    } catch (ignored) {
      return "en-US";
    }
  }

  /** ``timezone`` as its canonical IANA name (``europe/paris`` -> ``Europe/Paris``) when Intl knows it, else null. */
  function usableTimezone(timezone) {
    try {
      return new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
    } catch (ignored) {
      return null;
    }
  }

  function Formatter(locale, timezone) {
    this.locale = usableLocale(locale) || "en-US";
    this.timezone = usableTimezone(timezone) || "UTC";
    this.cache = {};
  }

  Formatter.prototype.numberFormat = function (key, options) {
    if (!this.cache[key]) this.cache[key] = new Intl.NumberFormat(this.locale, options);
    return this.cache[key];
  };

  // Cube's named numeric formats (/v1/meta shows them as {type: "custom-numeric", value: <d3>, alias: <name>}):
  // the family and, after "_", the decimals (trailing zeros trimmed, as the d3 "~" says).
  var NAMED_FORMAT = /^(number|decimal|percent|currency|accounting|abbr)(?:_(\d))?$/;

  /** A number by a column's format (a tile column, or a member of /v1/meta: {format, currency, abbreviate?}).
   * `abbreviate` (a chart's axis) writes it short: $1.2M, 12K. */
  Formatter.prototype.number = function (value, column) {
    if (value === null || value === undefined || value === "") return "–";
    var n = typeof value === "number" ? value : Number(value);
    if (!isFinite(n)) return String(value);
    column = column || {};
    var format = column.format;
    var digits = null;
    if (format && typeof format === "object") {
      var alias = String(format.alias || "");
      if (alias === "id") return String(Math.round(n));
      var match = NAMED_FORMAT.exec(alias);
      format = match ? match[1] : format.type;
      if (match && match[2] !== undefined) digits = Number(match[2]);
    }
    var short = !!column.abbreviate;
    var decimals = digits === null ? (Number.isInteger(n) ? 0 : 2) : digits;
    var options;
    if (format === "currency" || format === "accounting") {
      var code = String(column.currency || "USD").toUpperCase();
      options = { style: "currency", currency: code };
      if (format === "accounting") options.currencySign = "accounting";
      if (short) Object.assign(options, { notation: "compact", minimumFractionDigits: 0, maximumFractionDigits: 1 });
      else Object.assign(options, { minimumFractionDigits: digits === null ? 2 : Math.min(digits, 2), maximumFractionDigits: digits === null ? 2 : digits });
      try {
        return this.numberFormat(JSON.stringify(options), options).format(n);
      } catch (ignored) {
        return this.numberFormat("n:" + decimals, { maximumFractionDigits: decimals }).format(n) + " " + code;
      }
    }
    if (format === "percent") {
      // A fraction, as d3's % reads it (Cube's formatDescription of percent is .2~%): 0.125 -> 12.5%.
      options = { style: "percent", maximumFractionDigits: short ? 1 : digits === null ? 2 : digits };
      return this.numberFormat(JSON.stringify(options), options).format(n);
    }
    if (format === "abbr" || short) options = { notation: "compact", maximumFractionDigits: short ? 1 : decimals };
    else options = { maximumFractionDigits: decimals };
    return this.numberFormat(JSON.stringify(options), options).format(n);
  };

  var GRAIN_OPTIONS = {
    year: { year: "numeric" },
    month: { year: "numeric", month: "short" },
    day: { year: "numeric", month: "short", day: "numeric" },
    hour: { year: "numeric", month: "short", day: "numeric", hour: "numeric" },
    minute: { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit" },
    second: { dateStyle: "medium", timeStyle: "medium" },
  };

  function pad(number) {
    return (number < 10 ? "0" : "") + number;
  }

  /** A time value as its wall-clock time, in a Date read in UTC. A Cube time without an offset already is one (the
   * view composes queries in the viewer's time zone); one with an offset is read in `timezone`; a number or a Date is
   * a time Vega parsed from such a wall-clock text in the browser's own time zone, so it is read there. */
  function wallClock(value, timezone) {
    if (typeof value === "number" || value instanceof Date) {
      var local = new Date(value);
      if (isNaN(local.getTime())) return null;
      return new Date(Date.UTC(local.getFullYear(), local.getMonth(), local.getDate(), local.getHours(), local.getMinutes(), local.getSeconds()));
    }
    var text = String(value);
    if (!/(Z|[+-]\d\d:?\d\d)$/.test(text)) {
      var plain = new Date(text.replace(" ", "T") + (text.length <= 10 ? "T00:00:00Z" : "Z"));
      return isNaN(plain.getTime()) ? null : plain;
    }
    var zoned = new Date(text);
    if (isNaN(zoned.getTime())) return null;
    var parts = {};
    new Intl.DateTimeFormat("en-US", { timeZone: timezone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" })
      .formatToParts(zoned)
      .forEach(function (part) {
        parts[part.type] = Number(part.value);
      });
    return new Date(Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second));
  }

  /** The ISO week of a wall-clock day, as 2024-W05. A Sunday is read as the week it ends the eve of: the ticks Vega
   * steps weeks by fall on Sundays, and a Cube week (ISO) starts on the Monday after. */
  function isoWeek(wall) {
    var day = new Date(Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate()));
    if (day.getUTCDay() === 0) day.setUTCDate(day.getUTCDate() + 1);
    day.setUTCDate(day.getUTCDate() + 4 - (day.getUTCDay() || 7)); // the week's Thursday names its year
    var week = Math.ceil(((day.getTime() - Date.UTC(day.getUTCFullYear(), 0, 1)) / 86400000 + 1) / 7);
    return day.getUTCFullYear() + "-W" + pad(week);
  }

  /** A time value labelled for its grain: 2024, Q1 2024, Jan 2024, 2024-W05, Jan 5, 2024 (in the viewer's locale). */
  Formatter.prototype.date = function (value, granularity) {
    if (value === null || value === undefined || value === "") return "–";
    var wall = wallClock(value, this.timezone);
    if (!wall) return String(value);
    if (granularity === "week") return isoWeek(wall);
    var year = this.dateFormat("year").format(wall);
    if (granularity === "quarter") return "Q" + (Math.floor(wall.getUTCMonth() / 3) + 1) + " " + year;
    return this.dateFormat(GRAIN_OPTIONS[granularity] ? granularity : "day").format(wall);
  };

  Formatter.prototype.dateFormat = function (grain) {
    var key = "d:" + grain;
    if (!this.cache[key]) this.cache[key] = new Intl.DateTimeFormat(this.locale, Object.assign({ timeZone: "UTC" }, GRAIN_OPTIONS[grain]));
    return this.cache[key];
  };

  /** Format one value by its column ({type, format, currency, granularity, abbreviate}: a tile column the server
   * composed, or a member's description). The one formatter of KPIs, tables, pivots, chart axes and tooltips. */
  Formatter.prototype.value = function (value, column) {
    column = column || {};
    if (column.type === "time") {
      var grain = column.granularity && (column.granularity.name || column.granularity);
      return this.date(value, grain);
    }
    if (column.type === "number") return this.number(value, column);
    if (value === null || value === undefined) return "–";
    if (typeof value === "boolean") return value ? "true" : "false";
    return String(value);
  };

  // ---------------------------------------------------------------------------------------------
  // Theme and colour scheme: CSS custom properties on the root element
  // ---------------------------------------------------------------------------------------------

  var THEME_PROPERTIES = {
    primaryColor: "--embed-primary",
    accentColor: "--embed-primary",
    backgroundColor: "--embed-bg",
    foregroundColor: "--embed-fg",
    textColor: "--embed-fg",
    surfaceColor: "--embed-surface",
    borderColor: "--embed-border",
    mutedColor: "--embed-muted",
    font: "--embed-font",
    fontFamily: "--embed-font",
    borderRadius: "--embed-radius",
  };

  var SAFE_VALUE = /^[#(),.%\w\s'"-]{1,200}$/;

  function applyTheme(theme) {
    if (!theme || typeof theme !== "object") return;
    var style = document.documentElement.style;
    Object.keys(theme).forEach(function (key) {
      var property = THEME_PROPERTIES[key];
      var value = theme[key];
      if (typeof value === "number" && key === "borderRadius") value = value + "px";
      if (!property || typeof value !== "string" || !SAFE_VALUE.test(value)) return;
      style.setProperty(property, value);
    });
    var chat = theme.analyticsChat || {};
    if (typeof chat.backgroundColor === "string" && SAFE_VALUE.test(chat.backgroundColor))
      style.setProperty("--embed-chat-bg", chat.backgroundColor);
    var input = chat.chatInput || {};
    if (typeof input.backgroundColor === "string" && SAFE_VALUE.test(input.backgroundColor))
      style.setProperty("--embed-chat-input-bg", input.backgroundColor);
    if (typeof input.borderColor === "string" && SAFE_VALUE.test(input.borderColor))
      style.setProperty("--embed-chat-input-border", input.borderColor);
  }

  function setScheme(scheme) {
    if (scheme === "light" || scheme === "dark") document.documentElement.setAttribute("data-scheme", scheme);
    else document.documentElement.removeAttribute("data-scheme");
  }

  function isDark() {
    var scheme = document.documentElement.getAttribute("data-scheme");
    if (scheme) return scheme === "dark";
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  function cssVar(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  // ---------------------------------------------------------------------------------------------
  // Vega: CSP-safe embedding (AST + interpreter, canvas, no injected styles, own tooltip)
  // ---------------------------------------------------------------------------------------------

  var tooltipElement = null;

  /** A vega tooltip handler that builds its box with textContent and positions it with element.style. */
  function tooltipHandler(formatter) {
    return function (handler, event, item, value) {
      if (!tooltipElement) {
        tooltipElement = h("div.embed-tooltip", { role: "tooltip" });
        document.body.appendChild(tooltipElement);
      }
      var box = tooltipElement;
      if (value === null || value === undefined || value === "") {
        box.classList.remove("visible");
        return;
      }
      clear(box);
      if (typeof value === "object") {
        var rows = Object.keys(value).map(function (key) {
          var v = value[key];
          // A field with a format comes formatted (by CHART_FORMAT below); a bare number is written plainly.
          var shown = typeof v === "number" ? formatter().number(v) : String(v);
          return h("tr", h("th", { scope: "row" }, key), h("td", shown));
        });
        box.appendChild(h("table", h("tbody", rows)));
      } else {
        box.textContent = String(value);
      }
      box.classList.add("visible");
      var width = box.offsetWidth;
      var height = box.offsetHeight;
      var x = event.clientX + 12;
      var y = event.clientY + 12;
      if (x + width > window.innerWidth - 4) x = Math.max(4, event.clientX - width - 12);
      if (y + height > window.innerHeight - 4) y = Math.max(4, event.clientY - height - 12);
      box.style.left = x + "px";
      box.style.top = y + "px";
    };
  }

  function hideTooltip() {
    if (tooltipElement) tooltipElement.classList.remove("visible");
  }

  /** Vega config from the current CSS variables, so charts follow theme and colour scheme. */
  function vegaConfig() {
    var fg = cssVar("--embed-fg", "#1f2933");
    var muted = cssVar("--embed-muted", "#616e7c");
    var grid = cssVar("--embed-grid", "#e4e7eb");
    var primary = cssVar("--embed-primary", "#3b5bdb");
    var font = cssVar("--embed-font", "system-ui, sans-serif");
    var palette = [primary, "#f08c00", "#2f9e44", "#e03131", "#7048e8", "#1098ad", "#d6336c", "#5c940d", "#868e96", "#ae3ec9"];
    return {
      background: null,
      font: font,
      view: { stroke: null },
      axis: {
        labelColor: muted,
        titleColor: muted,
        gridColor: grid,
        domainColor: grid,
        tickColor: grid,
        labelFont: font,
        titleFont: font,
        titleFontWeight: 500,
        labelFontSize: 11,
        titleFontSize: 11,
      },
      legend: { labelColor: fg, titleColor: muted, labelFont: font, titleFont: font },
      title: { color: fg, font: font },
      range: { category: palette },
      mark: { color: primary },
      line: { strokeWidth: 2 },
      bar: { cornerRadiusEnd: 2 },
      arc: { stroke: cssVar("--embed-surface", "#fff") },
    };
  }

  /** Resolves once every deferred script of the page has run (the chart libraries come after the page's own
   * scripts, so a tile's rows may arrive before them). */
  var scriptsRun = new Promise(function (resolve) {
    if (document.readyState !== "loading") resolve();
    else document.addEventListener("DOMContentLoaded", resolve, { once: true });
  });

  /** vegaEmbed with the CSP-safe options. `datasets` are given to the spec by name (never fetched). */
  function embedVega(element, spec, datasets, formatter) {
    return scriptsRun.then(function () {
      return embedVegaNow(element, spec, datasets, formatter);
    });
  }

  // The expression function a chart's spec formats its values with (embedadmin/dashboards/tiles.py CHART_FORMAT:
  // Vega-Lite's custom formatType), given the column's format: the formatter of the chart's own embedVega call (its
  // view, once drawn; while it first draws, the newest chart's).
  var CHART_FORMAT = "embedFormat";
  var chartFormatter = function () {
    return new Formatter();
  };
  var viewFormatters = typeof WeakMap === "function" ? new WeakMap() : null;
  var chartFormatRegistered = false;

  function registerChartFormat(formatter) {
    if (formatter) chartFormatter = formatter;
    if (chartFormatRegistered || !window.vega || typeof window.vega.expressionFunction !== "function") return;
    window.vega.expressionFunction(CHART_FORMAT, function (value, column) {
      var view = this && this.context && this.context.dataflow;
      var formatter = (viewFormatters && view && viewFormatters.get(view)) || chartFormatter;
      return formatter().value(value, column && typeof column === "object" ? column : {});
    });
    chartFormatRegistered = true;
  }

  function embedVegaNow(element, spec, datasets, formatter) {
    if (typeof window.vegaEmbed !== "function") return Promise.reject(new Error("The chart library did not load"));
    registerChartFormat(formatter);
    var copy = JSON.parse(JSON.stringify(spec));
    delete copy.$schema;
    copy.datasets = Object.assign({}, copy.datasets || {}, datasets);
    if (copy.width === undefined && !copy.facet && !copy.hconcat && !copy.vconcat && !copy.repeat) copy.width = "container";
    if (copy.height === undefined && !copy.facet && !copy.hconcat && !copy.vconcat && !copy.repeat) copy.height = "container";
    if (!copy.autosize) copy.autosize = { type: "fit", contains: "padding" };
    return window.vegaEmbed(element, copy, {
      ast: true,
      expr: window.vega && window.vega.expressionInterpreter,
      renderer: "canvas",
      actions: false,
      defaultStyle: false,
      tooltip: tooltipHandler(formatter),
      config: vegaConfig(),
      logLevel: 0,
    }).then(function (result) {
      if (viewFormatters && formatter) viewFormatters.set(result.view, formatter);
      return result;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Downloads
  // ---------------------------------------------------------------------------------------------

  function download(href, filename) {
    var link = h("a", { href: href, download: filename, rel: "noopener" });
    link.hidden = true;
    document.body.appendChild(link);
    link.click();
    document.body.removeChild(link);
  }

  function downloadBlob(blob, filename) {
    var url = URL.createObjectURL(blob);
    download(url, filename);
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 10000);
  }

  /** Records in a CSV text, header excluded (quoted newlines are part of a record). */
  function csvRecordCount(text) {
    var records = 0;
    var quoted = false;
    var content = false;
    for (var i = 0; i < text.length; i += 1) {
      var c = text.charCodeAt(i);
      if (c === 34) quoted = !quoted;
      if (c === 10 && !quoted) {
        if (content) records += 1;
        content = false;
      } else if (c !== 13) content = true;
    }
    if (content) records += 1;
    return Math.max(0, records - 1);
  }

  function safeFilename(text) {
    return (String(text || "export").replace(/[^\w\- ]+/g, "").trim().replace(/\s+/g, "-") || "export").slice(0, 80);
  }

  /** A number that came as a string (Cube and the SQL API send them so) as a number; null, undefined and "" as
   * they are. */
  function numeric(value) {
    return value === null || value === undefined || value === "" ? value : Number(value);
  }

  /** Text split at blank lines into trimmed, non-empty paragraphs. */
  function paragraphs(text) {
    return String(text)
      .split(/\n\s*\n/)
      .map(function (p) {
        return p.trim();
      })
      .filter(Boolean);
  }

  /** The box a page shows in place of its content when it cannot start. */
  function errorBox(title, message) {
    return h("section.embed-error-box", { role: "alert" }, h("h1", title), h("p", message));
  }

  window.EmbedKit = {
    h: h,
    append: append,
    clear: clear,
    readBootstrap: readBootstrap,
    Session: Session,
    Host: Host,
    HttpError: HttpError,
    request: request,
    coreLoad: coreLoad,
    isSessionEnded: isSessionEnded,
    sleep: sleep,
    Formatter: Formatter,
    usableLocale: usableLocale,
    languageTag: languageTag,
    usableTimezone: usableTimezone,
    applyTheme: applyTheme,
    setScheme: setScheme,
    isDark: isDark,
    embedVega: embedVega,
    hideTooltip: hideTooltip,
    download: download,
    downloadBlob: downloadBlob,
    csvRecordCount: csvRecordCount,
    safeFilename: safeFilename,
    numeric: numeric,
    paragraphs: paragraphs,
    errorBox: errorBox,
  };
})();
