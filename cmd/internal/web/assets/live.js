// Live updates: when the server says the board moved, fetch this page's
// main part again and put it in place. Without JavaScript the page still
// works; it is only not live.
(function () {
  if (!window.EventSource) return;
  var dot = document.getElementById("live");
  var busy = false, again = false;
  function refresh() {
    if (document.getElementById("main").dataset.static) return; // a form of its own: never swapped away
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Part": "main" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.redirected) { location.reload(); return null; } // signed out: the page asks again
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html === null) return;
        document.getElementById("main").innerHTML = html;
        // A note's forms (outside the part swapped in) write against the
        // version the page opened with: say so once the note moved on.
        var act = document.getElementById("act");
        var shown = document.querySelector("#main h1[data-version]");
        if (act && shown && shown.dataset.version !== act.dataset.version) {
          var stale = act.querySelector(".stale");
          if (stale) stale.hidden = false;
        }
      })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/events");
  es.onopen = function () { if (dot) dot.className = "live on"; };
  es.onerror = function () { if (dot) dot.className = "live"; };
  es.addEventListener("now", function (e) {
    if (e.data === document.body.dataset.cursor) return;
    document.body.dataset.cursor = e.data; // moved while the stream was closed
    refresh();
  });
  es.addEventListener("moved", function (e) {
    document.body.dataset.cursor = e.data;
    refresh();
  });
})();
