// The panel's home: draws the sessions and chat messages per day (the JSON block "overview-per-day") as a
// Vega-Lite line chart with the vendored builds (no CDN). Without scripts, the table above still holds the totals.
(function () {
  "use strict";

  function draw() {
    var block = document.getElementById("overview-per-day");
    var target = document.getElementById("usage-chart");
    if (!block || !target || !window.vegaEmbed) return;
    var points = JSON.parse(block.textContent);
    // Counts are whole: below 10, one tick per whole number (Vega's ticks would fall on 0.2, 0.4...).
    var most = points.reduce(function (top, point) { return Math.max(top, point.count); }, 0);
    var yAxis = { format: ",.0f", tickMinStep: 1 };
    if (most < 10) {
      yAxis.values = [];
      for (var tick = 0; tick <= Math.max(most, 1); tick += 1) yAxis.values.push(tick);
    }
    var spec = {
      $schema: "https://vega.github.io/schema/vega-lite/v5.json",
      data: { values: points },
      width: "container",
      height: 200,
      mark: { type: "line", point: true, tooltip: true },
      encoding: {
        x: {
          field: "day",
          type: "temporal",
          timeUnit: "utcyearmonthdate",
          title: null,
          axis: { format: "%b %d", labelOverlap: true, grid: false },
        },
        y: { field: "count", type: "quantitative", title: null, axis: yAxis },
        color: { field: "kind", type: "nominal", title: null, legend: { orient: "top" } },
        tooltip: [
          { field: "day", type: "temporal", timeUnit: "utcyearmonthdate", title: "Day", format: "%a %b %d, %Y" },
          { field: "kind", type: "nominal", title: "What" },
          { field: "count", type: "quantitative", title: "Count", format: "," },
        ],
      },
      config: { font: "inherit", view: { stroke: null } },
    };
    window.vegaEmbed(target, spec, { actions: false, renderer: "svg" }).catch(function (error) {
      target.textContent = "The chart could not be drawn: " + error.message;
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
