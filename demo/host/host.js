// The host side of the embed contract (docs/dashboards.md, "Host messages"): what a host page needs.
// Messages are accepted only from the embed's origin and posted only to it, never to "*".
(function () {
  "use strict";
  var body = document.body;
  var embedOrigin = new URL(body.dataset.embedOrigin).origin;
  var viewer = body.dataset.viewer;
  var frame = document.getElementById("embed");
  var log = document.getElementById("events");

  function note(type, payload) {
    var item = document.createElement("li");
    var name = document.createElement("code");
    name.textContent = type.replace("cube:event:", "");
    item.appendChild(name);
    var detail = document.createElement("span");
    detail.textContent = " " + JSON.stringify(payload || {});
    item.appendChild(detail);
    log.insertBefore(item, log.firstChild);
    while (log.children.length > 30) log.removeChild(log.lastChild);
  }

  function act(type, payload) {
    frame.contentWindow.postMessage(
      { source: "cube-embed", direction: "action", type: type, payload: payload || {}, timestamp: Date.now() },
      embedOrigin
    );
  }

  function renew() {
    // The host's own back end mints the new session; the API key never reaches the browser.
    var query = "viewer=" + encodeURIComponent(viewer) + (body.dataset.allowExport === "true" ? "&allowExport=true" : "");
    fetch("/session?" + query, { method: "POST" })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        if (body.sessionId) act("cube:action:set-session", { sessionId: body.sessionId });
      });
  }

  window.addEventListener("message", function (event) {
    if (event.origin !== embedOrigin || event.source !== frame.contentWindow) return;
    var data = event.data;
    if (!data || data.source !== "cube-embed" || data.direction !== "event") return;
    note(data.type, data.payload);
    if (data.type === "cube:event:resize" && data.payload && data.payload.height > 0) {
      frame.style.height = Math.ceil(data.payload.height) + "px";
    } else if (data.type === "cube:event:session-expiring") {
      renew();
    }
  });

  // Exposed for the browser tests and for trying the actions by hand from the console.
  window.embedHost = { act: act, renew: renew };
})();
