// Starts Swagger UI on /api/docs over the spec URL the page names (templates/api_docs.html); an external
// script so the page's CSP needs no 'unsafe-inline'.
(function () {
  "use strict";
  var root = document.getElementById("api-docs");
  window.SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    // Tags start folded, with a filter box: expanded ("list"), swagger-ui 5.35 stopped rendering this spec's
    // operations after the first few tags.
    docExpansion: "none",
    filter: true,
  });
})();
