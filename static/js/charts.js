// Draws Plotly figures embedded as JSON (<script type="application/json">) and makes points
// clickable: a point's customdata[0] is the URL of the run it stands for.
(function () {
  "use strict";
  document.querySelectorAll("[data-figure]").forEach(function (div) {
    var source = document.getElementById(div.getAttribute("data-figure"));
    if (!source || typeof Plotly === "undefined") return;
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(div, figure.data, figure.layout, { responsive: true, displaylogo: false }).then(function () {
      div.setAttribute("data-ready", "1");
    });
    div.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      if (point && point.customdata && point.customdata[0]) {
        window.location.assign(point.customdata[0]);
      }
    });
  });
})();
