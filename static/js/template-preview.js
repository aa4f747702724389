/* Live preview in the message editors (the owner portal's and the staff admin's). Without
   JavaScript the portal's "Preview" button does the same: the draft is posted with
   action=preview and the server renders it through the real send path. Here the same request is
   made as the text is typed, and the new preview replaces the old one.

   The preview box (#preview-body) may name its form (data-form, default "template-form") and
   the URL that renders previews (data-preview-url, default: where the form posts). */
(function () {
  "use strict";

  function start() {
    var target = document.getElementById("preview-body");
    var form = target && document.getElementById(target.getAttribute("data-form") || "template-form");
    var status = document.getElementById("preview-status");
    if (!form || !target || !window.fetch || !window.DOMParser || !window.AbortController) {
      return;
    }
    // form.action would be the "action" button, not the attribute: post where the form posts.
    var url = target.getAttribute("data-preview-url") || form.getAttribute("action") || window.location.href;
    var timer = null;
    var inFlight = null;

    function refresh() {
      var data = new FormData(form);
      data.set("action", "preview");
      if (inFlight) {
        inFlight.abort();
      }
      inFlight = new AbortController();
      fetch(url, {
        method: "POST",
        body: data,
        credentials: "same-origin",
        signal: inFlight.signal
      })
        .then(function (response) { return response.text(); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("preview-body");
          if (!fresh) {
            return;
          }
          target.innerHTML = fresh.innerHTML;
          var announce = target.querySelector("[data-announce]");
          if (status) {
            status.textContent = announce ? announce.textContent : "The preview shows what to fix.";
          }
        })
        .catch(function () { /* aborted by a newer keystroke, or offline: the button still works */ });
    }

    function later() {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, 400);
    }

    form.addEventListener("input", later);
    form.addEventListener("change", later);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
