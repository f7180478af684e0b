// Progressive enhancement for the study pages: countdown timers, auto-submit when the finalise
// window ends, snippet highlighting, and filling a critique from a model critique ("use"). The server enforces every deadline on its own clock;
// this script only keeps the page in step with it.
(function () {
  "use strict";

  function setupTimer() {
    var timer = document.getElementById("timer");
    var form = document.getElementById("answer-form");
    if (!timer || !form) return;
    var phase = timer.getAttribute("data-phase");
    var remaining = parseInt(timer.getAttribute("data-remaining"), 10) || 0;
    var finalise = parseInt(timer.getAttribute("data-finalise"), 10) || 0;
    var end = Date.now() + remaining * 1000;
    var finalEnd = null;
    // The server's deadlines on its own clock: estimate the offset between its clock and this
    // one from when the page was requested and received (the server rendered it about half-way),
    // and count down to the server's deadline less the one-way delay, so that an answer sent at
    // "1 s left" reaches the server in time even on a slow link.
    var serverNow = parseInt(timer.getAttribute("data-server-now"), 10);
    var readDeadline = parseInt(timer.getAttribute("data-read-deadline"), 10);
    var finalDeadline = parseInt(timer.getAttribute("data-final-deadline"), 10);
    if (!isNaN(serverNow)) {
      var sent = Date.now(), received = sent;
      var nav = window.performance && performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
      if (nav && performance.timeOrigin && nav.responseStart > 0) {
        sent = performance.timeOrigin + nav.requestStart;
        received = performance.timeOrigin + nav.responseStart;
      }
      var oneWay = Math.max(0, (received - sent) / 2);
      var offset = serverNow - (sent + oneWay);  // server clock minus this clock
      var toLocal = function (serverMs) { return serverMs - offset - oneWay; };
      if (phase === "reading" && !isNaN(readDeadline)) end = toLocal(readDeadline);
      if (phase === "finalise" && !isNaN(finalDeadline)) end = toLocal(finalDeadline);
      if (!isNaN(finalDeadline)) finalEnd = toLocal(finalDeadline);
    }
    var submitted = false;
    form.addEventListener("submit", function () { submitted = true; });

    function autoSubmit() {
      if (submitted) return;
      submitted = true;
      document.getElementById("auto").value = "1";
      form.submit();
    }
    function enterFinalise() {
      phase = "finalise";
      var material = document.getElementById("material");
      if (material) material.classList.add("hidden");
      var note = document.getElementById("finalise-note-js");
      if (note) note.classList.remove("hidden");
      end = finalEnd !== null ? finalEnd : Date.now() + finalise * 1000;
    }
    function tick() {
      var left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
      timer.textContent = left + " s left" + (phase === "finalise" ? " to finalise" : "");
      if (left <= 0) {
        if (phase === "reading") {
          enterFinalise();
          if (finalise <= 0) { autoSubmit(); return; }
        } else {
          autoSubmit();
          return;
        }
      }
      window.setTimeout(tick, 250);
    }
    tick();
  }

  function setupSnippets() {
    // A snippet may be split into pieces where it overlaps another option's snippet: every piece
    // carries data-snip, the first one the id the link targets.
    var links = document.querySelectorAll("a.snippet-link");
    Array.prototype.forEach.call(links, function (link) {
      link.addEventListener("click", function (ev) {
        var id = link.getAttribute("data-target");
        var target = document.getElementById(id);
        if (!target) return;
        ev.preventDefault();
        var option = link.getAttribute("data-option");
        Array.prototype.forEach.call(document.querySelectorAll(".snip.highlight, .snip.active"), function (el) {
          el.classList.remove("highlight");
          el.classList.remove("active");
        });
        Array.prototype.forEach.call(document.querySelectorAll('.snip[data-option="' + option + '"]'), function (el) {
          el.classList.add("highlight");
        });
        Array.prototype.forEach.call(document.querySelectorAll('.snip[data-snip="' + id + '"]'), function (el) {
          el.classList.add("active");
        });
        target.scrollIntoView({ block: "center" });
      });
    });
  }

  function setupError() {
    // the answer panel scrolls on its own: bring a form error into view there
    var err = document.getElementById("form-error");
    if (err) err.scrollIntoView({ block: "nearest" });
  }

  function setupCritiqueUse() {
    // "use" a model critique: fill the empty critique box in place (without this script, or when
    // no box is empty, the button posts the form and the server adds a pre-filled box)
    var buttons = document.querySelectorAll("button.use");
    Array.prototype.forEach.call(buttons, function (btn) {
      btn.addEventListener("click", function (ev) {
        var rows = document.querySelectorAll(".critique-row");
        for (var i = 0; i < rows.length; i++) {
          var text = document.getElementById("c" + i + "-text");
          var source = document.getElementById("c" + i + "-source");
          if (text && source && !text.value.trim() && !source.value) {
            ev.preventDefault();
            text.value = btn.getAttribute("data-text");
            source.value = btn.value;
            text.focus();
            return;
          }
        }
      });
    });
  }

  function setupSessionWatch() {
    // Opening the study link again (another tab, window or browser) ends this page's session; its
    // submit would be refused. Ask the server whether this page is still current when the tab
    // comes back into view and every 20 s while it is visible, and say so at once if not.
    var token = document.body.getAttribute("data-session-csrf");
    if (!token || !window.fetch || !window.URLSearchParams) return;
    var stale = false, busy = false, last = 0;
    function show(message) {
      stale = true;
      var box = document.createElement("div");
      box.id = "session-stale";
      box.className = "session-stale";
      box.setAttribute("role", "alert");
      box.textContent = message;
      document.body.insertBefore(box, document.body.firstChild);
      Array.prototype.forEach.call(document.querySelectorAll("main form button"), function (b) {
        b.disabled = true;
      });
    }
    function check() {
      var now = Date.now();
      if (stale || busy || document.visibilityState === "hidden" || now - last < 2000) return;
      busy = true;
      last = now;
      var body = new URLSearchParams();
      body.set("csrf", token);
      fetch("/session", { method: "POST", body: body, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) { if (d && d.current === false) show(String(d.message || "")); })
        .catch(function () {}) // offline or restarting: ask again later
        .then(function () { busy = false; });
    }
    document.addEventListener("visibilitychange", check);
    window.addEventListener("focus", check);
    window.setInterval(check, 20000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupSessionWatch();
    setupCritiqueUse();
    setupTimer();
    setupSnippets();
    setupError();
  });
})();
