// What if (application page) and Size for a deadline (history page): fetch the JSON API on
// request, draw predicted time with its band and cost against executor count with Plotly
// (loaded only when needed), mark the observed run and the recommendation for a deadline.
// Everything from the server is put into the page as text (never as HTML).
(function () {
  "use strict";

  var UNIT_MS = { ms: 1, s: 1000, m: 60000, h: 3600000 };

  function parseDeadline(text) {
    var m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/i.exec(text || "");
    if (!m) return null;
    var ms = parseFloat(m[1]) * UNIT_MS[m[2].toLowerCase()];
    return ms > 0 ? ms : null;
  }

  function seconds(ms) {
    return (ms / 1000).toFixed(1) + " s";
  }

  // "4 executors of 1 core" (never "1 executors"), as the what-if page says it.
  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }
  function sizeWords(executors, cores) {
    return plural(executors, "executor") + " of " + plural(cores, "core");
  }
  function sizeConf(executors, cores) {
    return "spark.executor.instances=" + executors + ", spark.executor.cores=" + cores;
  }

  var plotlyPromise = null;
  function loadPlotly(src) {
    if (typeof Plotly !== "undefined") return Promise.resolve();
    if (!plotlyPromise) {
      plotlyPromise = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = resolve;
        s.onerror = reject;
        document.head.appendChild(s);
      });
    }
    return plotlyPromise;
  }

  // The cheapest point (money when priced, else core-hours) whose upper bound meets the deadline.
  function recommend(points, deadlineMs) {
    var best = null;
    points.forEach(function (p) {
      if (p.high_ms > deadlineMs) return;
      var price = p.cost !== null && p.cost !== undefined ? p.cost : p.core_hours;
      if (best === null || price < best.price || (price === best.price && p.predicted_ms < best.p.predicted_ms)) {
        best = { p: p, price: price };
      }
    });
    return best && best.p;
  }

  // Prices are configured when the server answered with money.
  function currencyOf(container, points) {
    var priced = points.some(function (p) { return p.cost !== null && p.cost !== undefined; });
    return priced ? container.getAttribute("data-currency") || "" : null;
  }

  function draw(div, points, opts) {
    var xs = points.map(function (p) { return p.executors; });
    var secs = function (key) { return points.map(function (p) { return p[key] / 1000; }); };
    var costKey = opts.currency ? "cost" : "core_hours";
    var costLabel = opts.currency ? "cost (" + opts.currency + ")" : "core-hours";
    var data = [
      { x: xs, y: secs("low_ms"), mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false, name: "low" },
      { x: xs, y: secs("high_ms"), mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: "rgba(31,119,180,0.2)", name: "interval" },
      { x: xs, y: secs("predicted_ms"), mode: "lines+markers", name: "predicted time (s)", line: { color: "#1f77b4" } },
      { x: xs, y: points.map(function (p) { return p[costKey]; }), mode: "lines+markers", name: costLabel, yaxis: "y2", line: { color: "#ff7f0e", dash: "dot" } }
    ];
    if (opts.observed) {
      data.push({ x: [opts.observed.executors], y: [opts.observed.duration_ms / 1000], mode: "markers", name: "observed run",
        marker: { symbol: "star", size: 14, color: "#2ca02c" } });
    }
    var shapes = [];
    if (opts.deadlineMs) {
      shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: opts.deadlineMs / 1000, y1: opts.deadlineMs / 1000,
        line: { color: "#d62728", dash: "dash" } });
    }
    if (opts.recommended) {
      data.push({ x: [opts.recommended.executors], y: [opts.recommended.predicted_ms / 1000], mode: "markers", name: "recommended",
        marker: { symbol: "diamond", size: 14, color: "#d62728" } });
    }
    var layout = {
      margin: { t: 20, r: 70, b: 50, l: 60 },
      xaxis: { title: { text: opts.xTitle || "executors" }, dtick: 1 },
      yaxis: { title: { text: "duration (s)" }, rangemode: "tozero" },
      yaxis2: { title: { text: costLabel }, overlaying: "y", side: "right", rangemode: "tozero" },
      legend: { orientation: "h", y: -0.2 },
      shapes: shapes
    };
    div.hidden = false;
    return Plotly.react(div, data, layout, { responsive: true, displaylogo: false }).then(function () {
      div.setAttribute("data-ready", "1");
      div.setAttribute("data-traces", String(data.length));
    });
  }

  function getJson(url) {
    return fetch(url, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.message || ("HTTP " + r.status));
        return body;
      });
    });
  }

  function recommendationText(rec, deadlineMs, floorMs, currency) {
    if (!deadlineMs) return "";
    if (!rec) {
      return "Nothing meets " + seconds(deadlineMs) + ": no executor count shown finishes in time with its upper bound; the floor (longest chain of stages + driver-only time) is " + seconds(floorMs) + ".";
    }
    var money = currency && rec.cost !== null ? ", " + rec.cost.toFixed(4) + " " + currency : "";
    return "Recommended for " + seconds(deadlineMs) + ": " + sizeWords(rec.executors, rec.cores) + " (" + sizeConf(rec.executors, rec.cores) + "), predicted " +
      seconds(rec.predicted_ms) + " (at most " + seconds(rec.high_ms) + "), " + rec.core_hours.toFixed(4) + " core-hours" + money + ".";
  }

  // ---------------------------------------------------------------- application page
  var section = document.getElementById("whatif");
  if (section && section.getAttribute("data-whatif-url")) {
    var form = document.getElementById("whatif-form");
    var status = document.getElementById("whatif-status");
    var chart = document.getElementById("whatif-chart");
    var recText = document.getElementById("whatif-recommendation");
    var modelText = document.getElementById("whatif-model");
    var last = null;

    var render = function () {
      if (!last) return;
      var deadlineText = document.getElementById("whatif-deadline").value;
      var deadlineMs = deadlineText ? parseDeadline(deadlineText) : null;
      if (deadlineText && !deadlineMs) {
        recText.textContent = "Deadline: “" + deadlineText + "” is not a duration; use e.g. 90s, 30m, 2h or 45000ms.";
      } else {
        var rec = deadlineMs ? recommend(last.points, deadlineMs) : null;
        recText.textContent = recommendationText(rec, deadlineMs, last.floor_ms, currencyOf(section, last.points));
        recText.setAttribute("data-recommended", rec ? String(rec.executors) : "");
      }
      var recommended = deadlineMs ? recommend(last.points, deadlineMs) : null;
      return loadPlotly(section.getAttribute("data-plotly-src")).then(function () {
        var cores = last.points.length ? last.points[0].cores : last.observed.cores;
        return draw(chart, last.points, { observed: last.observed, currency: currencyOf(section, last.points), deadlineMs: deadlineMs, recommended: recommended,
          xTitle: "executors (" + plural(cores, "core") + " each)" });
      });
    };

    var run = function () {
      var params = new URLSearchParams();
      params.set("executors", document.getElementById("whatif-executors").value);
      var cores = document.getElementById("whatif-cores").value;
      if (cores) params.set("cores", cores);
      var base = section.getAttribute("data-whatif-url");
      var url = base + (base.indexOf("?") >= 0 ? "&" : "?") + params.toString();
      status.textContent = "Predicting…";
      getJson(url).then(function (body) {
        last = body;
        status.textContent = "Observed: " + sizeWords(body.observed.executors, body.observed.cores) + ", " +
          seconds(body.observed.duration_ms) + ". Floor: " + seconds(body.floor_ms) + ".";
        modelText.textContent = body.model;
        return render();
      }).catch(function (err) {
        status.textContent = "No what-if: " + err.message;
        chart.hidden = true;
      });
    };

    form.addEventListener("submit", function (e) { e.preventDefault(); run(); });
    document.getElementById("whatif-deadline").addEventListener("input", function () { render(); });
    // Asked for when the section is opened, not with the page.
    var details = document.getElementById("whatif-details");
    var started = false;
    var start = function () {
      if (details.open && !started) { started = true; run(); }
    };
    details.addEventListener("toggle", start);
    if (window.location.hash === "#whatif") details.open = true;
    start();
  }

  // ---------------------------------------------------------------- history page
  var sizing = document.getElementById("sizing");
  if (sizing) {
    var sForm = document.getElementById("sizing-form");
    var sStatus = document.getElementById("sizing-status");
    var sChart = document.getElementById("sizing-chart");
    sForm.addEventListener("submit", function (e) {
      e.preventDefault();
      var deadline = document.getElementById("sizing-deadline").value;
      var deadlineMs = parseDeadline(deadline);
      if (!deadlineMs) {
        sStatus.textContent = "Deadline: “" + deadline + "” is not a duration; use e.g. 90s, 30m, 2h or 45000ms.";
        return;
      }
      var params = new URLSearchParams();
      params.set("name", sizing.getAttribute("data-name"));
      params.set("deadline", deadline.trim());
      var server = sizing.getAttribute("data-server");
      if (server) params.set("server", server);
      var inputBytes = document.getElementById("sizing-input").value;
      if (inputBytes) params.set("input_bytes", inputBytes);
      sStatus.textContent = "Sizing…";
      getJson(sizing.getAttribute("data-advise-url") + "?" + params.toString()).then(function (body) {
        var cur = currencyOf(sizing, body.curve);
        var rec = body.recommended;
        // The chart shows the core count of the recommendation (else the history's).
        var shown = body.curve;
        if (rec && body.curve.length && rec.cores !== body.curve[0].cores) {
          shown = (body.other_cores || []).filter(function (p) { return p.cores === rec.cores; });
        }
        var seen = (body.cores_seen || []).join(", ");
        sStatus.textContent = recommendationText(rec, body.deadline_ms, body.floor_ms, cur) +
          (rec && rec.basis === "simulation" ? " (simulation only: the history has not run " + rec.cores + " cores per executor)" : "") +
          " Cores per executor in the history: " + seen + "; other counts (" + (body.cores_considered || []).join(", ") +
          " considered) rest on the simulation alone.";
        document.getElementById("sizing-model").textContent = body.model + " (" + body.n_train + " runs).";
        sStatus.setAttribute("data-recommended", rec ? String(rec.executors) : "");
        sStatus.setAttribute("data-recommended-cores", rec ? String(rec.cores) : "");
        return loadPlotly(sizing.getAttribute("data-plotly-src")).then(function () {
          var shownCores = shown.length ? shown[0].cores : (rec ? rec.cores : 1);
          return draw(sChart, shown, { currency: cur, deadlineMs: body.deadline_ms, recommended: rec,
            xTitle: "executors (" + plural(shownCores, "core") + " each)" });
        });
      }).catch(function (err) {
        sStatus.textContent = "Cannot size: " + err.message;
      });
    });
  }
})();
