// Freshen dashboard: automatic refresh of the pages that show live state.
// The page works without it; it only reloads the <main> element every
// data-refresh seconds while the tab is visible, the checkbox is ticked
// and no form field is being edited.
(function () {
  "use strict";
  var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var box = document.getElementById("autorefresh");
  if (!seconds || !box) return;
  var key = "freshen.autorefresh";
  try { box.checked = window.localStorage.getItem(key) !== "off"; } catch (e) {}
  box.addEventListener("change", function () {
    try { window.localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) {}
  });
  var busy = false;
  function editing() {
    var a = document.activeElement;
    if (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA") && a !== box) return true;
    var open = document.querySelectorAll("main details[open]");
    return open.length > 0;
  }
  function refresh() {
    if (busy || !box.checked || document.hidden || editing()) return;
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (!r.ok || r.redirected) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelector("main");
        var main = document.querySelector("main");
        if (fresh && main) {
          var flash = main.querySelector(".flash");
          main.innerHTML = fresh.innerHTML;
          if (flash && !main.querySelector(".flash")) main.prepend(flash);
        }
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  window.setInterval(refresh, seconds * 1000);
})();
