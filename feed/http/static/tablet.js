// The host's tablet: signs in once (the token stays on this tablet), draws the floor
// document, keeps it live (server-sent events, polling as the fallback) and sends one
// request per tap, each with its own Idempotency-Key (the same key on a retry).
"use strict";
(() => {
  const STORE = "hoststand.tablet";
  const POLL_MS = 1500; // fallback polling while the event stream is down
  const STALE_MS = 20000; // no event or beat for this long: the stream is reopened
  const $ = (id) => document.getElementById(id);
  const st = { merchant: null, token: null, floor: null, es: null, lastEvent: 0, poll: null, chosen: null, chosenOn: null,
    // The booking whose Change… is open, as last learnt; what of the form the host has
    // touched (kept when the booking changes elsewhere); what it became if no longer booked;
    // whether the host's own change is on its way.
    changing: null, touched: { size: false, start: false }, gone: null, sending: false,
    polled: null,  // while polling: whether the last poll was answered (null: none yet)
    chooser: null,  // the open menu's checks (recheckChooser)
    seatNow: [],  // the "Seat now" parts the banner shows until OK (say), with their minute
    said: [],  // every part the banner shows, with the minute each was said
    tapped: null };  // the row, table or form of the last tap on the page (keepInView)

  // -- small helpers ------------------------------------------------------------------
  // Bidirectional controls (right-to-left override, isolates, marks) are dropped from all
  // the page shows: a partner's booking named "\u202e01 fo ytrap ,Ann" was drawn as
  // "... nnA, party of 10" for a party of 2, and turned the phone number and the notes
  // after it back to front. Names in Arabic or Hebrew letters still read right to left.
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const shown = (text) => String(text).replace(BIDI, "");
  const SHOWN_ATTRS = new Set(["title", "aria-label"]);  // ids (data-*, value) stay as sent
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "on") el.addEventListener("click", v);
      else if (k === "style") Object.assign(el.style, v);
      else el.setAttribute(k, v === true ? "" : SHOWN_ATTRS.has(k) ? shown(v) : v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(typeof kid === "string" || typeof kid === "number" ? shown(kid) : kid);
    }
    return el;
  }
  function newKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }
  const api = (path) => `/api/v1/restaurants/${encodeURIComponent(st.merchant)}${path}`;
  // A party without a name: a walk-in whose id was made up (meaningless to the host: "w-"
  // and 8 hex digits by the server, 10 by this page's own Add walk-in) is "Walk-in", a
  // booking "Guest"; an id the host chose itself ("A", as the seed's parties are called) is
  // how the host knows that party. The page's own were shown as "w-addd5787b0".
  const madeUp = /^w-[0-9a-f]{8}(?:[0-9a-f]{2})?$/;
  const who = (p) => p.name || (p.reservation || p.reservation_id ? "Guest"
    : !p.party_id || madeUp.test(p.party_id) ? "Walk-in" : p.party_id);
  const sizeOf = (p) => (p.size ? `, party of ${p.size}` : "");
  const party = (p) => `${who(p)}${sizeOf(p)}`;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // A host token refused in the middle of service was changed or revoked: the one saved on
  // the tablet is forgotten, and signing in again needs the current one.
  const REFUSED = "The host token was refused (changed or revoked): sign in with the current host token.";
  const UNREACHABLE = "The tablet cannot reach the server: check its Wi-Fi, then tap Sign in again.";
  // A day as a host reads it, whatever the browser's locale: "Tue 8 Dec" (its year too when
  // not the year of the service day). The browser's own format followed its locale, and a
  // London restaurant's 12/08/2026 (US order) reads as the 12th of August; words cannot be
  // misread. Every date the page shows says it so (headings, rows, banners, beside the Day
  // pickers), the server's messages' ISO dates ("2026-12-08") included.
  const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function dayWords(iso) {
    const [y, m, d] = iso.split("-").map(Number);
    const weekday = WEEKDAYS[new Date(Date.UTC(y, m - 1, d)).getUTCDay()];
    const year = st.floor && Number(st.floor.day.slice(0, 4)) !== y ? ` ${y}` : "";
    return `${weekday} ${d} ${MONTHS[m - 1]}${year}`;
  }
  // ISO dates in a text, in words ("moved to 2026-12-05 20:00": "moved to Sat 5 Dec 20:00");
  // a date and time run together ("2026-12-08T19:30", a value, not text) is left alone.
  const dated = (text) => text.replace(/\b\d{4}-\d{2}-\d{2}\b(?!T)/g, dayWords);
  const IN_WORDS = /((?:Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(?: \d{4})?)/;
  // Text with a date in it ("Phone booking on Tue 8 Dec"): the date is kept on one line, as a
  // narrow screen broke it ("Tue 8" / "Dec"), which reads as two things.
  function setText(el, text) {
    text = shown(dated(text));
    if (el.textContent === text) return;
    el.replaceChildren(...text.split(IN_WORDS)
      .map((part, i) => (i % 2 ? h("span", { class: "nobr" }, part) : part)).filter(Boolean));
  }
  // Beside each Day picker (whose own text is the browser's locale's), its day in words.
  function showDays() {
    for (const [input, words] of [["res-day", "res-day-words"], ["book-day", "book-day-words"]]) {
      const v = $(input).value;
      const text = v ? `${dayWords(v)}${st.floor && v === st.floor.day ? " (today)" : ""}` : "";
      if ($(words).textContent !== text) $(words).textContent = text;
    }
  }

  function saved() {
    try { return JSON.parse(localStorage.getItem(STORE)) || {}; } catch { return {}; }
  }
  function save(v) { localStorage.setItem(STORE, JSON.stringify(v)); }

  // -- requests -----------------------------------------------------------------------
  // `mark`: with another day listed, where that day's bookings stand (Bookings-Mark).
  async function getFloor() {
    const day = listed.day ? `?day=${encodeURIComponent(listed.day)}` : "";
    const r = await fetch(api(`/floor${day}`), { headers: { Authorization: `Bearer ${st.token}` } });
    const body = await r.json().catch(() => ({}));
    return { status: r.status, body, mark: r.headers.get("Bookings-Mark") };
  }

  // One tap: one key, reused when the request is retried after a lost connection.
  async function act(method, path, body, key = newKey()) {
    const init = {
      method,
      headers: { Authorization: `Bearer ${st.token}`, "Idempotency-Key": key },
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await fetch(api(path), init);
        if (r.status === 503 && attempt < 3) { await sleep(300 * (attempt + 1)); continue; }
        const data = await r.json().catch(() => ({}));
        refresh();
        if (listed.day) listDay();  // another day's list: the stream follows today only
        return { ok: r.ok, status: r.status, data };
      } catch (e) {
        if (attempt >= 3) return { ok: false, status: 0, data: { error: { code: "offline", message: "The tablet cannot reach the server. Try again." } } };
        await sleep(400 * (attempt + 1));
      }
    }
  }

  // A button that acts once per tap: disabled until the answer is in. The answer shows
  // clear of the row (or table, or form) tapped (keepInView).
  function tap(button, run) {
    if (button.disabled) return;
    button.disabled = true;
    const tapped = st.tapped;
    Promise.resolve(run()).finally(() => { button.disabled = false; keepInView(tapped); });
  }

  // -- plain words ----------------------------------------------------------------------
  function tableOf(id) { return (st.floor?.tables || []).find((t) => t.id === id); }
  function describeUnit(unit) {
    const ids = unit.split("+");
    for (const id of ids) {
      const t = tableOf(id);
      if (t?.occupant) {
        const o = t.occupant;
        return `${unit} is taken: ${party(o)}, seated at ${o.seated_at}`;
      }
    }
    return `Somebody sits at ${unit}`;
  }
  // Why a booking's row no longer allows what was tapped, as the server says it ("...
  // reservation not active: it was cancelled"), in the host's words: done elsewhere while
  // the row still offered it (another tablet, the partner's site, the clock).
  const INACTIVE = {
    "it was cancelled": "was cancelled meanwhile (on another tablet or online)",
    "it became a no-show": "became a no-show meanwhile (past its hold)",
    "the guests are already seated": "is already seated",
  };
  // "18:30" less 15 minutes: "18:15" (past midnight back to the day before's "23:50").
  function minutesBefore(hhmm, minutes) {
    const [hours, mins] = hhmm.split(":").map(Number);
    const at = (((hours * 60 + mins - minutes) % 1440) + 1440) % 1440;
    return `${String(Math.floor(at / 60)).padStart(2, "0")}:${String(at % 60).padStart(2, "0")}`;
  }
  function explain(res, ctx) {
    const err = res.data?.error || {};
    const code = err.code || "";
    const unit = ctx.unit || "";
    const name = ctx.name || "That party";
    switch (code) {
      case "table busy": return err.arrived ? err.message : describeUnit(unit);
      case "table too small": {
        const t = tableOf(unit);
        return `${unit}${t ? ` seats ${t.seats}` : ""}: too small for ${name}`;
      }
      case "table not occupied": return `Nobody sits at ${unit}`;
      case "unknown table": return `${unit} is not a table here`;
      case "not waiting": return `${name} is no longer waiting`;
      case "not seated": return `${name} is not sitting at a table`;
      case "unknown party": return `${name} is not on today's list`;
      case "reservation not active": {
        const why = INACTIVE[(err.message || "").replace(/^.*reservation not active: /, "")];
        return `The booking of ${name} ${why || "is no longer booked"}: ${ctx.undone || "nothing was done"}.`;
      }
      case "too early":
        // A booking of a later day: the message says when it is due.
        if (/a later day$/.test(err.message || "")) {
          return `Too early for ${name}: ${err.message.replace(/^.*too early: /, "")}`;
        }
        // What the host can do with guests this early: note them here (their table stays
        // theirs) or seat them now at a free table.
        return `Too early to check in ${name}${ctx.at ? ` (due ${ctx.at})` : ""}: their table is held` +
          ` from ${ctx.at ? minutesBefore(ctx.at, 15) : "15 minutes before"}.` +
          " Tap Arrived to note they are here, or Seat… them at a free table now.";
      case "party exists": return `${name} is already on the list`;
      // The message says how many wait and the restaurant's max_waitlist.
      case "waitlist full": return `${name} cannot join: ${err.message}`;
      case "unauthorized": signOut(REFUSED); return "Signed out";
      default: return err.message || `Something went wrong (${res.status})`;
    }
  }

  // -- banner ---------------------------------------------------------------------------
  // The message floats at the bottom of the screen (the host may be anywhere on the
  // page); the page gets its height as room below, so no control stays under it.
  // Every "Seat now" stays on screen until OK, whatever is said after it: the host has
  // guests to fetch. A later message (the clock's, another tablet's, this tablet's own
  // Free, Leave or Move, an error) comes after those still shown; it replaced them, and
  // a host who had not yet fetched Wyn read only the next table's party. `st.seatNow`:
  // the "Seat now: ..." parts on screen (none once the banner is closed).
  // Each part shows the restaurant's minute it was said at once the clock has moved on
  // ("At 17:58: Seat Hale, party of 2 at T5"): the answer stays until OK, and at 18:20 a
  // green "Seat Hale at T5" from 17:58 read as whom to seat now. Its minute is the one of
  // the floor read next (`at`: null until then; a tap reads the floor as it answers),
  // as the floor on screen may be a minute behind the server's; `at`: the minute of the
  // floor that says it.
  // A party already said ("Seat now: Hal at T4", by the floor as it came, before the
  // tap's own answer that seated Hal) is not said again: it read "Seat now: Hal, party
  // of 2 at T4 · Seat now: Hal, party of 2 at T4".
  function say(text, kind, at = null) {
    const kept = $("banner").hidden ? [] : st.seatNow;
    const from = text.indexOf("Seat now: ");
    const part = from >= 0 ? text.slice(from) : null;
    const again = part !== null && kept.some((p) => p.text === part);
    st.seatNow = part !== null && !again ? [...kept, { text: part, at }] : kept;
    const rest = again ? text.slice(0, from).replace(/[.\s]+$/, "") : text;
    st.said = rest ? [...kept, { text: rest, at }] : kept;
    showSaid();
    // Green while it says whom to seat, unless what is said last went wrong.
    $("banner").className = `banner ${kind === "bad" || !st.seatNow.length ? kind || "" : "seat"}`;
    $("banner").hidden = false;
    keepClear();
  }
  function showSaid() {
    if ($("banner").hidden && !st.said.length) return;
    const clock = st.floor?.clock;
    setText($("banner-text"), st.said.map((p) => (p.at && clock && p.at !== clock ? `At ${p.at}: ${p.text}` : p.text)).join(" · "));
    $("stand").style.paddingBottom = `${$("banner").offsetHeight + 24}px`;
  }
  // The row, table or form a tap was made on (a selector: the page redraws it), kept in
  // view above the message when the message came up over it: "Too early to check in Ben
  // ... Tap Arrived ... or Seat…" covered that very row's Arrived and Seat… when it was
  // in the bottom 100 px of the screen. Not brought back when the host has scrolled it
  // out of sight meanwhile: a message never moves the page to somewhere else.
  function keepInView(selector) {
    const el = selector && document.querySelector(selector);
    if (!el || $("banner").hidden) return;
    const r = el.getBoundingClientRect();
    const message = $("banner").getBoundingClientRect().top - 8;
    const bar = document.querySelector("header.bar").getBoundingClientRect().bottom + 8;
    if (r.bottom <= message || r.top >= window.innerHeight) return;
    window.scrollBy(0, Math.min(r.bottom - message, Math.max(r.top - bar, 0)));
  }
  function tappedOn(target) {
    const row = target.closest?.("#stand li[data-reservation], #stand li[data-party], #stand [data-table], #stand form[id]");
    if (!row) return null;
    for (const key of ["reservation", "party", "table"]) {
      const v = row.dataset[key];
      if (v !== undefined) return `${row.tagName.toLowerCase()}[data-${key}="${CSS.escape(v)}"]`;
    }
    return `#${CSS.escape(row.id)}`;
  }

  function unsay() {
    st.said = [];
    st.seatNow = [];
    $("banner").hidden = true;
    $("stand").style.paddingBottom = "";
    keepClear();
  }

  // -- live -----------------------------------------------------------------------------
  function setLive(on, text) {
    const el = $("live");
    el.textContent = text;
    el.className = `live ${on ? "on" : "off"}`;
    // Offline, what the page shows is the floor as it was when last read, and its clock
    // stands still: both are greyed, so the host does not read 18:10 at 18:25 as now
    // (only the small "offline" sign said so, and the clock and the waits looked current).
    document.body.classList.toggle("stale", text === "offline");
    $("clock").title = text === "offline" ? "Last known time: the tablet is offline" : "";
  }
  async function refresh() {
    if (!st.token) return;
    try {
      const { status, body, mark } = await getFloor();
      if (status === 200) draw(body);
      else if (status === 401) signOut(REFUSED);
      else if (body.error) say(body.error.message, "bad");
      if (!st.poll) return;
      // Polling while the stream is down: the page is current all the same, and says so
      // (it said "reconnecting" for as long as the stream stayed down, a proxy cutting it).
      if (status === 200) { st.polled = true; setLive(true, "live"); }
      // Another day listed is read again when its bookings changed (the stream's
      // `bookings`), not at every poll. The first mark seen for the day reads it too: a
      // change between the list's read and the mark's is not lost, as the stream also
      // sends `bookings` once when it opens.
      if (mark && listed.day && mark.startsWith(`${listed.day}/`) && mark !== listed.mark) {
        listed.mark = mark;
        readListed(listed.day);
      }
    } catch { if (st.poll) st.polled = false; setLive(false, "offline"); }
  }
  function openStream() {
    closeStream();
    if (!window.EventSource) { startPolling(); return; }
    // Another day listed: the stream also says when that day's bookings change.
    const day = listed.day ? `&day=${encodeURIComponent(listed.day)}` : "";
    const es = new EventSource(api(`/events?token=${encodeURIComponent(st.token)}${day}`));
    st.es = es;
    st.lastEvent = Date.now();
    es.addEventListener("floor", (e) => {
      st.lastEvent = Date.now();
      stopPolling();
      st.polled = null;  // when the stream next drops, "reconnecting" until a poll answers or fails
      setLive(true, "live");
      draw(JSON.parse(e.data));
    });
    es.addEventListener("bookings", (e) => {
      st.lastEvent = Date.now();
      const { day: changed } = JSON.parse(e.data);
      if (changed === listed.day) readListed(changed);
    });
    es.addEventListener("beat", () => { st.lastEvent = Date.now(); });
    es.addEventListener("closed", (e) => {
      st.lastEvent = Date.now();
      const body = JSON.parse(e.data);
      say(body.error?.message || "Closed today", "bad");
    });
    // Down (or not let through): polling keeps the page current meanwhile; "reconnecting"
    // only until a poll answers ("live") or fails ("offline"), without flickering between.
    es.onerror = () => { if (st.polled === null) setLive(false, "reconnecting"); startPolling(); };
  }
  function closeStream() { if (st.es) { st.es.close(); st.es = null; } stopPolling(); }
  function startPolling() { if (!st.poll) st.poll = setInterval(refresh, POLL_MS); }
  function stopPolling() { if (st.poll) { clearInterval(st.poll); st.poll = null; } }
  setInterval(() => {
    if (st.token && st.es && Date.now() - st.lastEvent > STALE_MS) openStream();
  }, 5000);

  // -- drawing --------------------------------------------------------------------------
  function keepFocus(fn) {
    const key = document.activeElement?.dataset?.focus;
    fn();
    if (key) document.querySelector(`[data-focus="${CSS.escape(key)}"]`)?.focus();
  }
  function draw(floor) {
    const before = st.floor;
    st.floor = floor;
    stampSaid(floor);
    $("title").textContent = shown(floor.name);
    $("title").title = shown(floor.name);  // whole, where a phone's bar cuts it
    $("clock").textContent = floor.clock;
    keepFocus(() => {
      drawFloor(floor);
      drawQueue(floor);
      drawReservations(floor);
      drawSpots(floor);
    });
    follow();
    sizeLimit();
    fillSlots();
    recheckChooser();
    showDays();
    seatedByTheClock(floor);
    noShows(before, floor);
    if (!$("banner").hidden) showSaid();  // a minute on: what was said says when
  }
  // A booking whose hold ran out with nobody here became a no-show: said once, on the
  // floor that shows it (the tablet offline across it too), unless the clock's seating
  // of its table says so already ("— Lou (18:15) did not come"). The table turned from
  // held to free without a word, and guests arriving 20 minutes late were found with
  // nothing to tap on their row.
  function noShows(before, floor) {
    if (!before || before.day !== floor.day) return;
    const was = new Map(before.reservations.map((r) => [r.reservation_id, r.status]));
    const told = new Set((floor.clock_seated || []).flatMap((c) => c.no_shows || []));
    const gone = floor.reservations.filter((r) => r.status === "no-show" && !told.has(r.reservation_id) &&
      (was.get(r.reservation_id) === "booked" || was.get(r.reservation_id) === "arrived"));
    if (!gone.length) return;
    const and = (xs) => xs.join(" and ");
    const units = [...new Set(gone.map((r) => r.unit).filter(Boolean))];
    say(`${and(gone.map((r) => `${party(r)} (${r.time})`))} did not come: ${gone.length > 1 ? "no-shows" : "a no-show"}` +
      (units.length ? `, ${and(units)} no longer held for them.` : "."), "", floor.clock);
  }
  // What was said since the last floor was read is of this floor's minute.
  function stampSaid(floor) {
    for (const p of [...st.said, ...st.seatNow]) if (p.at === null) p.at = floor.clock;
  }
  // A party's Size goes up to the restaurant's largest (max_party_size, Marlowe's 10), the
  // message saying so: the fields allowed 20 whatever the restaurant, and a walk-in of 12
  // went to the server to be refused. The phone booking's Size has the same limit.
  function sizeLimit() {
    const f = st.floor;
    if (!f || !f.max_party_size) return;
    const max = String(f.max_party_size);
    for (const box of [$("walkin-form").size, $("book-form").size]) {
      if (box.max !== max) box.max = max;
      const over = box.value !== "" && Number(box.value) > f.max_party_size;
      box.setCustomValidity(over ? `${f.name} seats parties of at most ${max}.` : "");
    }
  }
  // The clock seats parties with nobody's tap: a booking past its hold becomes a no-show
  // and the waitlist's pass gives its table to the next party, or a wait reaches its limit.
  // The host is told whom to fetch, as after a Free (the floor drew Gus seated while Gus
  // still stood at the bar). The floor lists every party the clock seated today
  // (`clock_seated`; a tap's own seatings are never in it, its answer said them): each is
  // said once here, while it still sits where the clock put it, however this tablet learns
  // of it. Coming back after being offline across it, with the log grown meanwhile by other
  // changes (a walk-in added elsewhere, the very party seated), it was not said: what was
  // known then was only the floor before and after.
  // So is every party the seating pass sat after an operation elsewhere (`pass_seated`:
  // a partner's cancel, another tablet's Free): this tablet's own taps say theirs in their
  // answer (ownSeated), and are not said again.
  function seatedByTheClock(floor) {
    const list = [...(floor.clock_seated || []), ...(floor.pass_seated || [])];
    const key = (c) => `${c.party_id}@${c.unit}`;
    if (!st.clockSaid || st.clockSaid.day !== floor.day) {
      // Signed in, or a new day: what the clock did before is no news to say now.
      st.clockSaid = { day: floor.day, keys: new Set(list.map(key)) };
      return;
    }
    const fresh = list.filter((c) => !st.clockSaid.keys.has(key(c)));
    fresh.forEach((c) => st.clockSaid.keys.add(key(c)));
    const seated = fresh.map((c) => ({ c, o: floor.tables.find((t) => t.occupant?.party_id === c.party_id)?.occupant }))
      .filter(({ c, o }) => o && o.unit === c.unit);
    if (!seated.length) return;
    const gone = [...new Set(seated.flatMap(({ c }) => c.no_shows || []))]
      .map((id) => floor.reservations.find((r) => r.reservation_id === id)).filter(Boolean);
    const why = gone.length ? ` — ${gone.map((r) => `${party(r)} (${r.time})`).join(" and ")} did not come` : "";
    // A "Seat now" still on screen (not dismissed) is kept, the new one after it (say): on
    // a busy night a second party seated a minute later replaced the first before the host
    // had fetched it, and nothing on the page said the first any more.
    say(`Seat now: ${seated.map(({ o }) => `${party(o)} at ${o.unit}`).join("; ")}${why}`, "seat", floor.clock);
  }

  // Guests marked arrived whose table is not ready wait at the door: how long ("here 12
  // min"), from the minute they were marked, redrawn with the floor every minute. Amber
  // from 10 minutes past their booked time (past their arrival, when they came late), red
  // from 20. The door promise (PRODUCT.md) is that a party on time finds its table free:
  // every minute past their time is ours, and 10 is where a restaurant worries (the host
  // goes to them, apologises, offers the bar); 20, the evening is going wrong. Minutes
  // early for their own time are theirs, not counted. `r`: the floor's row of the booking.
  function hereFor(id) {
    const f = st.floor;
    const r = f && f.reservations.find((x) => x.reservation_id === id);
    if (!r || r.status !== "arrived" || r.arrived_minute === null || r.arrived_minute === undefined) return null;
    const over = f.minute - Math.max(r.arrived_minute, r.at);
    return { text: `here ${f.minute - r.arrived_minute} min`, cls: over >= 20 ? "worry long" : over >= 10 ? "worry" : "" };
  }
  // A guest's name on a table's card, then the rest of its line (", party of 4", " (4) at
  // 19:00"): the name takes one line at most, cut with "…" (whole in the line's tooltip,
  // the card's label and the booking's own row), the rest follows it or wraps below. A
  // long name wrapped over six lines of a phone's narrow card, and the whole row of cards
  // grew as tall. A comma after the name stays with it.
  function named(p, rest) {
    const comma = rest.startsWith(",");
    return [h("span", { class: "cut" }, who(p) + (comma ? "," : "")), comma ? rest.slice(1) : rest];
  }
  function tableText(t, unit) {
    const seats = unit ? unit.seats : t.seats;
    const kids = [
      h("span", { class: "tid" }, unit ? unit.id : t.id),
      // The number first, on one line with its dots: a narrow card wrapped a 6-top's dots
      // into a row of 4 and a row of 2 beside the 6; now the dots that do not fit are cut.
      h("span", { class: "seats", "aria-label": `${seats} seats` }, `${seats} ` + "●".repeat(Math.min(seats, 20))),
    ];
    const o = t.occupant;
    if (o) {
      kids.push(h("span", { class: "who", title: party(o) }, named(o, sizeOf(o))));
      const left = o.overstay ? `over by ${-o.turn_left} min` : `${o.turn_left} min left`;
      kids.push(h("span", { class: "when" }, `${o.seated_for} min seated · ${left}`));
    } else if (t.hold) {
      const hd = t.hold;
      const here = hd.arrived ? hereFor(hd.reservation_id) : null;
      const until = hd.until ? `until ${hd.until}` : `guests ${here ? here.text : "here"}`;
      // Past their time and not here: how late, as the booking's row says it. The card
      // read "18:15 · until 18:30" at 18:26, as if Tanaka's guests were not yet due.
      const row = hd.arrived ? null : st.floor.reservations.find((r) => r.reservation_id === hd.reservation_id);
      const late = row && st.floor.minute > row.at ? ` · ${st.floor.minute - row.at} min late` : "";
      kids.push(h("span", { class: "state" }, "Held"));
      kids.push(h("span", { class: "who", title: party(hd) }, named(hd, sizeOf(hd))));
      kids.push(h("span", { class: `when ${here ? here.cls : late ? "worry" : ""}` }, `${hd.at}${late} · ${until}`));
    } else {
      kids.push(h("span", { class: "state" }, "Free"));
    }
    const nx = t.next;
    if (nx && !t.hold) {  // the booking due next here: why a free table is kept, by when to be done
      // Amber: the party there is still eating when the booking is due, or it is due now
      // (or past) and they are still there, over their turn or not.
      // So is a party over its turn once the booking's hold has begun (15 minutes before
      // its time, when its guests may check in): 'over by 5 min' with 'next: Lindqvist (2)
      // at 18:30' in grey read as a table with time to spare beside one whose guests were
      // at the door, while the guests due there could come in now and find it taken.
      const held = o && o.overstay && nx.in_minutes > 0 && nx.in_minutes <= 15;
      const tight = o && (o.turn_left > nx.in_minutes || nx.in_minutes <= 0 || held);
      const here = nx.arrived ? hereFor(nx.reservation_id) : null;
      // Past its time and not here: how late, as the booking's row says it ("due now" at
      // 18:40 for Abernathy's 18:30 read as guests on their way in, not 10 minutes late).
      const late = nx.arrived ? ` · ${here ? `${here.text}, waiting` : "here, waiting"}`
        : nx.in_minutes < 0 ? ` · ${-nx.in_minutes} min late` : nx.in_minutes === 0 ? " · due now"
        : held ? ` · held from ${minutesBefore(nx.at, 15)}` : tight ? " · still eating then" : "";
      const rest = `${nx.size ? ` (${nx.size})` : ""} at ${nx.at}${late}`;
      kids.push(h("span", { class: (tight || nx.arrived ? "next tight" : "next") + (here?.cls ? ` ${here.cls}` : ""), title: `next: ${who(nx)}${rest}` },
        "next: ", named(nx, rest)));
    }
    return kids;
  }
  function tableClass(t) {
    if (t.occupant) return t.occupant.overstay ? "table seated over" : "table seated";
    return t.hold ? "table held" : "table free";
  }
  function drawFloor(floor) {
    const el = $("floor");
    const cols = Math.max(...floor.tables.map((t) => t.x)) + 1;
    el.style.gridTemplateColumns = `repeat(${cols}, minmax(0, 1fr))`;
    const done = new Set();
    const nodes = [];
    for (const t of floor.tables) {
      if (done.has(t.id)) continue;
      const o = t.occupant;
      let unit = null;
      if (o && o.unit.includes("+")) {
        const ids = o.unit.split("+");
        const parts = ids.map(tableOf).filter(Boolean);
        const xs = parts.map((p) => p.x), ys = parts.map((p) => p.y);
        const w = Math.max(...xs) - Math.min(...xs) + 1, hgt = Math.max(...ys) - Math.min(...ys) + 1;
        if (parts.length === ids.length && w * hgt === parts.length) {
          unit = { id: o.unit, seats: parts.reduce((s, p) => s + p.seats, 0), x: Math.min(...xs), y: Math.min(...ys), w, h: hgt };
          ids.forEach((id) => done.add(id));
        }
      }
      const label = unit ? `Tables ${unit.id} joined` : `Table ${t.id}`;
      const btn = h("button", {
        type: "button",
        class: tableClass(t) + (o && o.unit.includes("+") ? " joined" : ""),
        "data-focus": `table-${t.id}`,
        "data-table": unit ? unit.id : t.id,
        "aria-label": `${label}: ${describeTable(t)}`,
        on: () => tableMenu(t),
        style: {
          gridColumn: `${(unit || t).x + 1} / span ${unit ? unit.w : 1}`,
          gridRow: `${(unit || t).y + 1} / span ${unit ? unit.h : 1}`,
        },
      }, tableText(t, unit));
      if (o && o.unit.includes("+") && !unit) btn.append(h("span", { class: "state" }, `joined: ${o.unit}`));
      nodes.push(btn);
      done.add(t.id);
    }
    el.replaceChildren(...nodes);
  }
  function describeTable(t) {
    if (t.occupant) {
      const o = t.occupant;
      return `${party(o)}, seated ${o.seated_for} minutes, ${o.overstay ? `over their turn by ${-o.turn_left}` : `${o.turn_left} left`}`;
    }
    if (t.hold) return `held for ${party(t.hold)} at ${t.hold.at}`;
    return `free, ${t.seats} seats`;
  }

  function drawQueue(floor) {
    const items = floor.queue.map((p, i) => h("li", { "data-party": p.party_id },
      h("div", { class: "main" },
        h("span", { class: "name" }, `${i + 1}. ${who(p)}`), " ",
        h("span", { class: "meta" }, `party of ${p.size} · waited ${p.waited} min` +
          (p.quote !== null && p.quote !== undefined ? ` · quoted ${p.quote} min` : "")),
        // Past the wait they were told: the host goes to them before they come asking (the
        // row said "waited 30 min · quoted 23 min", the sum left to the host at the door).
        p.quote !== null && p.quote !== undefined && p.waited > p.quote
          ? h("span", { class: "badge late" }, `${p.waited - p.quote} min over quote`) : null,
        p.next_up ? h("span", { class: "badge next" }, ` next up: ${p.next_up}`) : null),
      h("div", { class: "acts" },
        h("button", { type: "button", class: "primary", "data-focus": `seat-${p.party_id}`, on: () => seatMenu(p, "seat") }, "Seat…"),
        h("button", { type: "button", class: "danger", "data-focus": `leave-${p.party_id}`, on: (e) => tap(e.currentTarget, () => leave(p)) }, "Left"))));
    $("queue").replaceChildren(...(items.length ? items : [h("li", { class: "empty" }, "Nobody is waiting.")]));
  }

  // A phone number is read as one: no line break inside it.
  const unbroken = (text) => (text || "").replace(/ /g, "\u00a0").replace(/-/g, "\u2011");

  // The finder: a guest at the door on a busy night says a name (or the phone's last
  // digits); the list keeps the bookings that match, in time order.
  // Folded for the finder: no accents, no punctuation ("Muller" finds Müller, "obrien"
  // O'Brien), words kept apart.
  const fold = (s) => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, "");
  function matches(r, query) {
    const q = query.trim().toLowerCase();
    if (!q) return true;
    const text = fold([who(r), r.time, r.unit, r.notes, r.status].join(" "));
    const digits = q.replace(/[^0-9]/g, "");
    const phone = (r.phone || "").replace(/[^0-9]/g, "");
    return fold(q).split(/\s+/).filter(Boolean).every((word) => text.includes(word)) ||
      (digits.length >= 3 && digits.length === q.replace(/[\s+()-]/g, "").length && phone.includes(digits));
  }
  // The reservations listed: today's (the floor document's, live) or another day's, as
  // `host reservations --date` lists them (GET /reservations?date=), read when the day is
  // picked, after each tap and whenever the live stream says that day's bookings changed
  // (another tablet, a partner): the guest phoning about Saturday is served here too.
  const listed = { day: null, rows: [], asked: 0, mark: null };
  async function listDay() {
    const day = $("res-day").value;
    const was = listed.day;
    listed.mark = null;  // the day picked is read now; its first mark seen reads it again
    if (!day || day === st.floor?.day) {
      listed.day = null; listed.rows = []; listed.asked++;  // a read under way is dropped
      if (st.floor) keepFocus(() => drawReservations(st.floor));
      if (was && st.es) openStream();  // today's list: the floor document's, live already
      return;
    }
    await readListed(day);
    if (listed.day === day && was !== day && st.es) openStream();  // to follow that day
  }
  // Reads `day`'s list (the one picked): the last read asked wins, an earlier one answering
  // later is dropped.
  async function readListed(day) {
    const asked = ++listed.asked;
    let r, data;
    try {
      r = await fetch(api(`/reservations?date=${encodeURIComponent(day)}`), { headers: { Authorization: `Bearer ${st.token}` } });
      data = await r.json().catch(() => ({}));
    } catch { setLive(false, "offline"); listed.mark = null; return; }  // the list stays as it was; read again at the next poll
    if (asked !== listed.asked || $("res-day").value !== day) return;  // another read, or day, since
    if (r.status === 401) { signOut(REFUSED); return; }
    if (!r.ok) { say(data.error?.message || `Something went wrong (${r.status})`, "bad"); return; }
    listed.day = day;
    // As the floor document has them; `day`: the service day (a late service's 00:15
    // starts on the next calendar day).
    listed.rows = (data.reservations || []).map((x) => ({
      ...x, day, time: x.start.slice(11, 16), start: x.start.slice(0, 16), size: x.party_size,
    }));
    if (st.floor) keepFocus(() => drawReservations(st.floor));
    if (st.changing && follow()) fillSlots();
  }
  function drawReservations(floor) {
    const query = $("res-find").value;
    const today = !listed.day;
    const pick = $("res-day");  // shows the day listed (today's moves on at midnight)
    if (today && pick.value !== floor.day && document.activeElement !== pick) pick.value = floor.day;
    setText($("res-h"), today ? "Reservations today" : `Reservations on ${listed.day}`);
    showDays();
    const all = today ? floor.reservations : listed.rows;
    // Today's still to come (booked, or at the door) first, by time, then those done with
    // (seated, no-shows, cancelled) under their own heading: by 21:00 on a night of thirty
    // bookings the guests arriving were below twenty rows of parties long seated.
    const done = (r) => today && !(r.status === "booked" || r.status === "arrived");
    const matching = all.filter((r) => matches(r, query));
    const shown = [...matching.filter((r) => !done(r)), ...matching.filter(done)];
    const items = shown.map((r) => {
      const live = r.status === "booked" || r.status === "arrived";
      const b = (label, cls, fn) => h("button", { type: "button", class: cls, "data-focus": `${label}-${r.reservation_id}`, on: (e) => tap(e.currentTarget, fn) }, label);
      return h("li", { "data-reservation": r.reservation_id },
        h("div", { class: "main" },
          h("span", { class: "name" }, `${r.time} · ${who(r)}`), " ",
          h("span", { class: "meta" }, [r.size ? `party of ${r.size}` : "", r.unit, unbroken(r.phone), r.notes].filter(Boolean).join(" · ")), " ",
          h("span", { class: `badge ${r.status}` }, r.moved_to ? dated(`moved to ${r.moved_to}`)
            : r.status + (r.seated_at ? ` at ${r.seated_at}` : "")),
          // Still booked past its time: the host calls them before the hold runs out.
          today && r.status === "booked" && floor.minute > r.at
            ? h("span", { class: "badge late" }, `${floor.minute - r.at} min late`) : null,
          // At the door, their table not ready: how long they have waited (hereFor).
          ...(today ? [hereFor(r.reservation_id)].filter(Boolean).map((here) =>
            h("span", { class: `badge here${here.cls ? ` ${here.cls}` : ""}` }, here.text)) : []),
          r.over_pacing ? h("span", { class: "badge over" }, "over pacing") : null,
          // A reload found it outside the rules (kept): the host moves or cancels it.
          r.attention ? h("span", { class: "badge attention" }, r.attention) : null),
        // Another day's guests are not at the door: changed or cancelled only.
        live ? h("div", { class: "acts" },
          today ? b("Check in", "primary", () => checkIn(r)) : null,
          today && r.status === "booked" ? b("Arrived", "", () => arrive(r)) : null,
          r.status === "booked" ? h("button", { type: "button", "data-focus": `change-${r.reservation_id}`, on: () => changeMenu(r) }, "Change…") : null,
          today ? h("button", { type: "button", "data-focus": `seatr-${r.reservation_id}`, on: () => seatMenu(r, "seat") }, "Seat…") : null,
          b("Cancel", "danger", () => cancel(r))) : null);
    });
    const when = today ? "today" : `on ${dayWords(listed.day)}`;
    const none = all.length ? `No booking ${when} matches “${query.trim()}”.` : `No reservations ${when}.`;
    const first = shown.findIndex(done);
    if (first >= 0) items.splice(first, 0, h("li", { class: "divider" }, "Seated, no-shows and cancelled"));
    $("reservations").replaceChildren(...(items.length ? items : [h("li", { class: "empty" }, none)]));
  }

  function drawSpots(floor) {
    const next = floor.slots.slice(0, 4);
    // The sizes the floor seats (a slot lists those), smallest first.
    const sizes = [...new Set(next.flatMap((s) => Object.keys(s.open)))].sort((a, b) => a - b);
    const head = h("tr", {}, h("th", { scope: "col" }, "Guests"), next.map((s) => h("th", { scope: "col" }, s.time)));
    const rows = sizes.map((n) => h("tr", {}, h("th", { scope: "row" }, n),
      next.map((s) => {
        const v = s.open[n] ?? 0;
        const over = v > 0 && (s.over_pacing || []).includes(n);
        return h("td", { class: v ? (over ? "over" : "") : "none", title: over ? "over pacing" : "" }, over ? `${v}*` : String(v));
      })));
    const caption = next.length ? "Open spots by party size (* over pacing)" : "No more slots today";
    $("spots").replaceChildren(h("caption", { class: "meta" }, caption), head, ...rows);
  }

  // The phone booking's day: today (the floor document's slots) or another day, whose
  // slots are read once per day chosen (GET /slots?date=).
  const other = { day: null, slots: [] };
  async function pickDay() {
    const form = $("book-form");
    const day = form.day.value;
    // Back on the booking's own day: a booking being changed has its own time chosen again.
    const own = (d) => (d === ownDay() ? ownStart() : null);
    // Another day's time is the host's choice; back on the booking's own day, its own.
    st.touched.start = Boolean(st.changing) && (day || st.floor?.day) !== ownDay();
    if (!day || day === st.floor?.day) { other.day = null; chooseTime(own(st.floor?.day), st.floor?.day); fillSlots(); return; }
    // Not read (offline, refused): the Day goes back to the day whose times the form
    // shows. It stayed on the day picked above tonight's times, and Book booked tonight.
    let r, data;
    try {
      r = await fetch(api(`/slots?date=${encodeURIComponent(day)}`), { headers: { Authorization: `Bearer ${st.token}` } });
      data = await r.json().catch(() => ({}));
    } catch {
      form.day.value = formDay();
      showDays();
      say(`The tablet cannot reach the server: the times of ${day} were not read. Pick the day again.`, "bad");
      return;
    }
    if (r.status === 401) { signOut(REFUSED); return; }
    if (!r.ok) {
      form.day.value = formDay();
      showDays();
      say(data.error?.message || `Something went wrong (${r.status})`, "bad");
      return;
    }
    other.day = day; other.slots = data.slots || [];
    chooseTime(own(day), day);  // null: a time of another day
    fillSlots();
  }
  // The time the host chose, and the service day whose slots it is one of: a late
  // service's 00:30 starts on the next calendar date, yet is that day's.
  function chooseTime(start, day) {
    st.chosen = start || null;
    st.chosenOn = start ? day : null;
  }
  function fillSlots() {
    const form = $("book-form");
    if (st.floor && !form.day.value) form.day.value = st.floor.day;
    const size = String(form.size.value || "");
    const select = form.start;
    const was = st.chosen || select.value;
    const slots = other.day ? other.slots : (st.floor?.slots || []);
    const when = other.day ? "that day" : "today";
    const options = slots.filter((s) => (s.open[size] ?? 0) > 0)
      .map((s) => h("option", { value: s.start },
        `${s.time} (${s.open[size]} open${(s.over_pacing || []).includes(size) ? ", over pacing" : ""})`));
    // A booking being changed holds its own time: that slot may show no spot open for
    // others, yet a change of size only must be able to keep it.
    const own = ownStart();
    if (own && ownDay() === (other.day || st.floor?.day) && !options.some((o) => o.value === own)) {
      const at = options.findIndex((o) => o.value > own);
      const mine = h("option", { value: own }, `${own.slice(11)} (their time)`);
      options.splice(at < 0 ? options.length : at, 0, mine);
    }
    // The time the host chose stays chosen whatever a live update says of it: marked when
    // it is no longer open, so Book sends what the host chose and the refusal is shown.
    const chosen = st.chosen && !options.some((o) => o.value === st.chosen) && st.chosen !== own
      ? st.chosen : null;
    if (chosen && st.chosenOn === (other.day || st.floor?.day)) {
      const slot = slots.find((s) => s.start === chosen);
      const at = options.findIndex((o) => o.value > chosen);
      const gone = h("option", { value: chosen }, `${chosen.slice(11)} — ${slot ? "full now" : "no longer open"}`);
      options.splice(at < 0 ? options.length : at, 0, gone);
    }
    select.replaceChildren(...(options.length ? options : [h("option", { value: "" }, `No open slot ${when}`)]));
    if ([...select.options].some((o) => o.value === was)) select.value = was;
    // A new booking's heading names the day it books on when not today: the Time's
    // options say no date, and the form stays on a day picked (for that guest's next
    // call) until the host picks today again, while most calls are about tonight.
    if (!st.changing) setText($("book-h"), other.day ? `Phone booking on ${other.day}` : "Phone booking");
    showDays();
  }
  // The start of the booking being changed: its own local date and time (after midnight,
  // a late service's booking is on the next calendar day).
  function ownStart() {
    return st.changing ? st.changing.start : null;
  }
  // Its service day: another day's list says it (`day`), today's is today's.
  function ownDay() {
    return st.changing ? st.changing.day || st.floor?.day : null;
  }
  // The service day the form books on: its times are that day's slots (a late service's
  // 00:30 among them, though it starts on the next calendar date).
  function formDay() {
    return other.day || st.floor?.day;
  }

  // -- the host's actions ---------------------------------------------------------------
  function units() {
    const f = st.floor;
    const busy = new Set(f.tables.filter((t) => t.occupant).map((t) => t.id));
    const list = f.tables.map((t) => ({ id: t.id, seats: t.seats, hold: t.hold, next: t.next, busy: busy.has(t.id) }));
    for (const c of f.combos) {
      const holds = c.tables.map(tableOf).map((t) => t?.hold).filter(Boolean);  // its held tables
      // The booking due first on any of its tables.
      const next = c.tables.map(tableOf).map((t) => t?.next).filter(Boolean)
        .sort((a, b) => a.in_minutes - b.in_minutes)[0];
      list.push({ id: c.id, seats: c.capacity, hold: holds[0], holds, next, busy: c.tables.some((id) => busy.has(id)), combo: true });
    }
    return list;
  }
  // A menu of choices. It stays true while open (another tablet acts meanwhile): `still`
  // says why it no longer applies (its party seated, gone or moved, its table taken or
  // freed), and then it offers nothing; a table offered that is taken meanwhile stays in
  // its place (no button moves under the host's finger), marked and not tappable. `self`:
  // the party being moved (its own tables are not taken).
  function choose(title, note, options, still, self) {
    const d = $("chooser");
    setText($("chooser-h"), title);
    setText($("chooser-note"), note || "");
    $("chooser-options").replaceChildren(...options.map((o) => h("button", {
      type: "button", class: o.cls || "", "data-unit": o.value, "data-label": o.label,
      "data-table-option": o.table ? "" : null,
      on: (e) => { d.close(); tap(e.currentTarget, o.run); },
    }, o.label)));
    st.chooser = { still, self };
    d.showModal();
  }
  function recheckChooser() {
    const c = st.chooser;
    if (!c || !$("chooser").open) return;
    const why = c.still ? c.still() : null;
    if (why) {
      setText($("chooser-note"), why);
      $("chooser-options").replaceChildren();
      st.chooser = null;
      return;
    }
    for (const b of $("chooser-options").querySelectorAll("button[data-table-option]")) {
      const taken = b.dataset.unit.split("+").map((id) => tableOf(id)?.occupant)
        .find((o) => o && o.party_id !== c.self);
      b.disabled = Boolean(taken);
      b.textContent = shown(taken ? `${b.dataset.label} — taken now: ${who(taken)}` : b.dataset.label);
    }
  }
  // Where a party sits now (its occupant's row of the floor), or nothing.
  const sitting = (pid) => st.floor.tables.find((t) => t.occupant?.party_id === pid)?.occupant;
  // Why a menu for party `p` (a walk-in waiting, a booking, or a party seated at p.unit
  // to be moved) no longer applies, or null.
  function partyGone(p, kind) {
    if (kind === "move") {
      const o = sitting(p.party_id);
      if (o && o.unit === p.unit) return null;
      return o ? `${party(p)} was moved to ${o.unit} meanwhile.` : `${p.unit} was freed meanwhile: ${party(p)} left.`;
    }
    if (p.reservation_id) {
      const r = st.floor.reservations.find((x) => x.reservation_id === p.reservation_id);
      if (!r || r.status === "booked" || r.status === "arrived") return null;
      if (r.status === "seated") return `${party(p)} was seated${r.seated_at ? ` at ${r.seated_at}` : ""} meanwhile.`;
      const why = { cancelled: "it was cancelled", "no-show": "it became a no-show" }[r.status];
      return `The booking of ${party(p)} ${INACTIVE[why] || "is no longer booked"}.`;
    }
    if (st.floor.queue.some((q) => q.party_id === p.party_id)) return null;
    const o = sitting(p.party_id);
    return o ? `${party(p)} was seated at ${o.unit} meanwhile.` : `${party(p)} is no longer waiting.`;
  }
  // The booking due next at a unit offered (not yet held: a hold is said already), as the
  // floor's table says it: a party seated there now may still be eating then. Not the
  // booking being seated itself.
  function dueNext(u, p) {
    const nx = u.next;
    if (u.hold || !nx || nx.reservation_id === p.reservation_id) return "";
    return ` · next: ${who(nx)}${nx.size ? ` (${nx.size})` : ""} at ${nx.at}${nx.arrived ? `, ${hereFor(nx.reservation_id)?.text || "here"}, waiting` : ""}`;
  }
  function seatMenu(p, kind) {
    const size = p.size || 0;
    const name = who(p);
    const id = kind === "move" ? p.party_id : (p.reservation_id || p.party_id);
    const own = new Set(kind === "move" && p.unit ? p.unit.split("+") : []);
    // A walk-in never sits at a unit smaller than the party (the engine refuses it: "table
    // too small"); a booking's size is not the engine's to check, so all stay offered.
    const walkIn = kind === "move" ? !p.reservation : !p.reservation_id;
    // Green: a unit that seats the party and is nobody else's now. One held for other
    // guests (due, or at the door) is offered as it says, not green: Seat asks first.
    const ownHold = kind === "move" ? null : p.reservation_id;
    const heldForOthers = (u) => (u.holds || [u.hold]).some((hd) => hd && hd.reservation_id !== ownHold);
    // A waiting walk-in's meal would run into the booking due next there (the engine keeps
    // the table from it, and its 'next up' never names it): not green either, and said.
    // So would a seated party's moved there, in the minutes its turn has left.
    // So would a booking's guests seated early, or away from their own table, at a table
    // another booking is due at before they would finish (Pellegrini, early, were offered
    // Tanaka's table due in 17 minutes in green).
    const clear = kind === "move" ? p.turn_left : p.clear_minutes;
    const kept = (u) => Boolean(clear && !u.hold && u.next && u.next.reservation_id !== p.reservation_id &&
      u.next.in_minutes < clear);
    const taken = (u) => heldForOthers(u) || kept(u);
    // A booking's own table, free: offered first, and said so. Seat… left it out (taken
    // for the unit a party being moved sits at), so guests early with their table free
    // were offered only other guests' tables.
    const theirs = kind === "move" ? null : p.reservation_id && p.unit;
    const opts = units()
      .filter((u) => (kind !== "move" || u.id !== p.unit) && u.id.split("+").every((id) => !tableOf(id)?.occupant || own.has(id)))
      .filter((u) => !walkIn || !size || u.seats >= size)
      .sort((a, b) => (b.id === theirs) - (a.id === theirs))
      .map((u) => ({
        value: u.id,
        cls: size && u.seats >= size && !taken(u) && (!u.combo || u.id === theirs || size > Math.max(...st.floor.tables.map((t) => t.seats))) ? "fits" : "",
        label: `${u.id} · ${u.seats} seats${u.id === theirs ? " · their table" : ""}${u.hold && u.hold.reservation_id !== p.reservation_id ? ` · held for ${who(u.hold)} until ${u.hold.until || "seated"}` : ""}${dueNext(u, p)}${kept(u) ? ", before they would finish" : ""}`,
        table: true,
        seats: u.seats,
        u,
        run: () => (kind === "move" ? move(p, u.id, u) : seat(p, id, u.id, u)),
      }));
    const verb = kind === "move" ? "Move" : "Seat";
    const none = walkIn && size ? `No free table seats a party of ${size} now.` : "No table is free.";
    // None offered seats the party (a booking's guests, a party moved): said, not "green
    // ones fit", which sent the host looking for a green table that is not there.
    // Those that seat it all held for other guests: said too (they were green, under
    // "green ones fit the party", and the host walked Ed's couple to Cy's table).
    const fits = !size || opts.some((o) => o.seats >= size);
    const free = !size || opts.some((o) => o.cls === "fits" || (o.seats >= size && !taken(o.u)));
    const booked = opts.some((o) => o.seats >= size && kept(o.u));
    const note = !opts.length ? none : !fits
      ? `No free table seats a party of ${size} now: choose a smaller one anyway, or Close and seat them when one frees.`
      : free ? "Choose a table (green ones fit the party)."
        : booked ? `Every table that seats a party of ${size} now is held for other guests or booked before they would finish: choose one anyway, or Close and seat them when one frees.`
          : `Every table that seats a party of ${size} now is held for other guests: choose one anyway (you are asked first), or Close and seat them when one frees.`;
    choose(`${verb} ${party(p)}`, note, opts,
      () => partyGone(p, kind), kind === "move" ? p.party_id : null);
  }
  function tableMenu(t) {
    const o = t.occupant;
    if (o) {
      choose(`${o.unit}: ${party(o)}`, `Seated at ${o.seated_at}, ${o.seated_for} min.`, [
        { value: "free", cls: "fits", label: `Free ${o.unit} (they left)`, run: () => free(o.unit.split("+")[0], o.unit) },
        { value: "move", label: "Move them…", run: () => seatMenu({ ...o }, "move") },
      ], () => partyGone(o, "move"));
      return;
    }
    const f = st.floor;
    // Whom the host most likely seats here first, as a night's list runs to twenty
    // bookings: the guests the table is held for (green), the waitlist (green: the table
    // its 'next up' names), the guests at the door, then the other bookings by time. The
    // held guests were in the middle of the evening's bookings, like any other.
    const holder = t.hold?.reservation_id;
    const live = f.reservations.filter((r) => r.status === "booked" || r.status === "arrived");
    const rank = (r) => (r.reservation_id === holder ? 0 : r.status === "arrived" ? 2 : 3);
    const booking = (r) => ({
      value: r.reservation_id, cls: r.reservation_id === holder ? "fits" : "",
      label: `${r.time} ${party(r)} (${r.reservation_id === holder ? "held here" : r.status === "arrived" ? "here" : "booked"})`,
      run: () => seat(r, r.reservation_id, t.id, t),
    });
    const opts = [
      ...live.filter((r) => rank(r) === 0).map(booking),
      ...f.queue.map((p) => ({ value: p.party_id, label: `${who(p)} (${p.size}) waited ${p.waited} min`, cls: p.next_up === t.id ? "fits" : "", run: () => seat(p, p.party_id, t.id, t) })),
      ...live.filter((r) => rank(r) > 0).sort((a, b) => rank(a) - rank(b)).map(booking),
    ];
    const note = t.hold ? `Held for ${party(t.hold)} at ${t.hold.at}${t.hold.until ? ` until ${t.hold.until}` : ""}.` : "Seat somebody here:";
    const taken = () => {
      const now = tableOf(t.id)?.occupant;
      return now ? `${t.id} was taken meanwhile: ${party(now)} sits there.` : null;
    };
    choose(`${t.id} · ${t.seats} seats`, opts.length ? note : `${note} nobody is waiting.`, opts, taken);
  }

  // The parties a tap's answer says it seated ("pid@unit"): said by that answer, so not
  // again when the floor lists them (pass_seated).
  function ownSeated(list) {
    for (const s of list) st.clockSaid?.keys.add(s);
  }
  function seatedWords(list, floor) {
    const f = floor || st.floor;
    return list.map((s) => {
      const [pid, unit] = s.split("@");
      const q = f?.queue.find((p) => p.party_id === pid);
      const r = f?.reservations.find((x) => x.party_id === pid);
      return `${q ? party(q) : r ? party(r) : pid} at ${unit}`;
    });
  }
  // A walk-in whose answer never came (the connection dropped): it may have been added.
  // Add walk-in tapped again for the same party (the form as it was) sends the same
  // request under the same key, so the server answers what it did, once: a new id and
  // key put the party on the waitlist twice.
  let unanswered = null;
  async function addWalkIn(form) {
    const size = parseInt(form.size.value, 10);
    const name = form.name.value.trim();
    const fresh = { size, name, phone: form.phone.value.trim(), party_id: `w-${newKey().slice(0, 10)}` };
    const again = unanswered && ["size", "name", "phone"].every((k) => unanswered.body[k] === fresh[k]);
    const { body, key } = again ? unanswered : { body: fresh, key: newKey() };
    const res = await act("POST", "/walk-ins", body, key);
    unanswered = res.status === 0 ? { body, key } : null;
    const label = `${name || "Walk-in"}, party of ${size}`;
    if (!res.ok) { say(explain(res, { name: label }), "bad"); return; }
    // The next walk-in is another party: its size is asked afresh (the form's 2), not the
    // last one's (a 6 left there would seat the next couple at the six-top).
    form.name.value = ""; form.phone.value = ""; form.size.value = form.size.defaultValue;
    const result = String(res.data.result);
    if (result.startsWith("seated")) { say(`Seat ${label} at ${result.slice(7)}`, "seat"); return; }
    // Its quote, from the floor as it now is; not read (the connection dropped after the
    // walk-in was added), the place alone is said: no word at all had the host add them twice.
    const floor = await getFloor().then((f) => f.body, () => ({}));
    const me = (floor.queue || []).find((p) => p.party_id === body.party_id);
    const place = result.replace("queued ", "");
    say(`${label}: waitlist, place ${place}` + (me && me.quote !== null ? ` — quote ${me.quote} min` : ""), "");
  }
  async function free(table, unit) {
    const before = st.floor;
    const res = await act("POST", `/tables/${encodeURIComponent(table)}/free`);
    if (!res.ok) { say(explain(res, { unit }), "bad"); return; }
    const seated = Array.isArray(res.data.result) ? res.data.result : [];
    ownSeated(seated);
    // Named as they were in the queue a moment ago (they are seated now).
    if (seated.length) { say(`Seat now: ${seatedWords(seated, before).join("; ")}`, "seat"); return; }
    // Nobody in line is due it, but the table may be held for a booking: its guests at the
    // door are whom to seat now. "T2 is free. Nobody in line is due it yet." while Okafor's
    // couple, at the door for T2, waited read as a table for anybody.
    const floor = await getFloor().then((f) => (f.status === 200 ? f.body : null), () => null);
    const holds = floor ? unit.split("+").map((id) => floor.tables.find((x) => x.id === id)?.hold).filter(Boolean) : [];
    const hold = holds.find((hd) => hd.arrived) || holds[0];
    if (!hold) { say(`${unit} is free. Nobody in line is due it yet.`, ""); return; }
    if (hold.arrived) { say(`${unit} is free, held for ${party(hold)} (${hold.at}), who are here: check them in.`, "seat"); return; }
    say(`${unit} is free, held for ${party(hold)} at ${hold.at}.`, "");
  }
  // A table held for guests (maybe at the door already) is the host's to give away, but
  // only knowingly: asked when any table of the unit is held for somebody other than
  // `own` (a booking's own hold does not count; a pair may hold it too).
  function mayTake(u, own, unit, verb, whom) {
    const other = u && (u.holds || [u.hold]).find((hd) => hd && hd.reservation_id !== own);
    return !other || confirm(`${unit} is held for ${party(other)} until ${other.until || "they are seated"}. ${verb} ${whom} there anyway?`);
  }
  // This tablet's own act on the booking whose Change… is open (its row's Cancel, Check
  // in, Seat…) is no change "meanwhile": the form says nothing of it while it is on its
  // way, and is the phone booking's again once it is done (nothing is left to change), so
  // the answer to the tap (the table to seat them at) is what the banner shows.
  async function onChanging(id, run) {
    const mine = Boolean(id) && st.changing?.reservation_id === id;
    if (mine) st.sending = true;
    try {
      const res = await run();
      if (mine && res.ok && st.changing?.reservation_id === id) endChange();
      return res;
    } finally {
      if (mine) st.sending = false;
    }
  }
  async function seat(p, id, unit, t) {
    if (!mayTake(t, p.reservation_id, unit, "Seat", who(p))) return;
    const res = await onChanging(p.reservation_id, () => act("POST", `/parties/${encodeURIComponent(id)}/seat`, { unit }));
    if (!res.ok) { say(explain(res, { unit, name: party(p) }), "bad"); return; }
    // Others the pass sits after it (a large party's claim lifted) are not said here: the
    // floor lists them (pass_seated) and they are said as soon as it comes.
    say(`${party(p)} seated at ${unit}`, "seat");
  }
  async function move(o, unit, u) {
    if (!mayTake(u, null, unit, "Move", who(o))) return;  // a seated party holds nothing
    const before = st.floor;
    const res = await act("POST", `/parties/${encodeURIComponent(o.party_id)}/move`, { unit });
    if (!res.ok) { say(explain(res, { unit, name: party(o) }), "bad"); return; }
    const seated = res.data.result || [];
    ownSeated(seated);
    say(`${party(o)} moved to ${unit}` + (seated.length ? `. Seat now: ${seatedWords(seated, before).join("; ")}` : ""), "seat");
  }
  // Taking a party off the waitlist cannot be undone (added again, they queue last), and
  // Left sits beside Seat…: asked first, as a booking's Cancel is.
  async function leave(p) {
    if (!confirm(`Take ${party(p)} off the waitlist (they left)?`)) return;
    const before = st.floor;
    const res = await act("POST", `/parties/${encodeURIComponent(p.party_id)}/leave`);
    if (!res.ok) { say(explain(res, { name: party(p) }), "bad"); return; }
    const seated = res.data.result || [];
    ownSeated(seated);
    say(`${party(p)} left the waitlist` + (seated.length ? `. Seat now: ${seatedWords(seated, before).join("; ")}` : ""), seated.length ? "seat" : "");
  }
  // A Check in or Cancel whose answer never came (the connection dropped after the server
  // had done it): tapped again on the booking's row, still drawn as it was, it goes again
  // under the same key, so the server answers what the first tap did ("Seat Flo at T1",
  // "cancelled"), as Add walk-in and Book do. A new key was told the booking was
  // "cancelled meanwhile (on another tablet or online)", untrue of this tablet's own tap.
  // A booking is checked in or cancelled once, so its key is kept until answered; a
  // table's Free or a party's Leave, Seat or Move may rightly be done again later, and
  // are not sent under an old key.
  const lostTaps = new Map();  // the request's path -> the key of the lost tap
  async function once(path) {
    const key = lostTaps.get(path) || newKey();
    const res = await act("POST", path, undefined, key);
    if (res.status === 0) lostTaps.set(path, key); else lostTaps.delete(path);
    return res;
  }
  async function checkIn(r) {
    const res = await onChanging(r.reservation_id, () => once(`/reservations/${encodeURIComponent(r.reservation_id)}/check-in`));
    if (res.ok) { say(`Seat ${party(r)} at ${res.data.tables.join("+")}`, "seat"); return; }
    say(explain(res, { unit: r.unit, name: party(r), at: r.time }), "bad");
    if (res.data?.error?.arrived) seatMenu({ ...r, status: "arrived" }, "seat");
  }
  async function arrive(r) {
    const res = await act("POST", `/reservations/${encodeURIComponent(r.reservation_id)}/arrive`);
    if (!res.ok) { say(explain(res, { name: party(r) }), "bad"); return; }
    // Early (their hold starts 15 minutes before their time): held from then, not yet.
    const early = st.floor && r.at - 15 > st.floor.minute;
    say(`${party(r)} marked arrived: their table ${early ? `is held for them from ${minutesBefore(r.time, 15)}` : "stays held"}`, "");
  }
  const onDay = (r) => (r.day ? ` on ${dayWords(r.day)}` : "");  // a booking of another day's list
  async function cancel(r) {
    if (!confirm(`Cancel the booking of ${party(r)} at ${r.time}${onDay(r)}?`)) return;
    const before = st.floor;
    const res = await onChanging(r.reservation_id, () => once(`/reservations/${encodeURIComponent(r.reservation_id)}/cancel`));
    if (!res.ok) { say(explain(res, { name: party(r) }), "bad"); return; }
    // The table it held may go to the waitlist at once (the engine's pass): whom to fetch
    // is said, as after a Free. It said only "cancelled", and Wyn sat unseen at T1.
    const seated = Array.isArray(res.data.seated) ? res.data.seated : [];  // "wyn@T1"
    ownSeated(seated);
    say(`${party(r)} at ${r.time}${onDay(r)} cancelled` + (seated.length ? `. Seat now: ${seatedWords(seated, before).join("; ")}` : ""), seated.length ? "seat" : "");
  }
  // Changing a booking (the guest phoned): the phone booking form, filled with the booking,
  // books it again at the time and size chosen, under the same id (POST .../change).
  const HELD = ["name", "phone", "notes"];  // the booking's own; a change keeps them
  function changeMenu(r) {
    const form = $("book-form");
    st.changing = r;
    st.touched = { size: false, start: false };
    st.gone = null;
    if (r.size) form.size.value = r.size;
    form.day.value = ownDay();
    other.day = null;
    if (ownDay() !== st.floor.day) {
      pickDay();  // that day's times, the booking's own chosen
    } else {
      fillSlots();
      chooseTime(ownStart(), ownDay());  // a change of size only keeps the time
      form.start.value = st.chosen;
    }
    for (const k of HELD) { form[k].value = r[k] || ""; form[k].disabled = true; }
    setText($("book-h"), changeHeading(r));
    form.querySelector("button[type=submit]").textContent = "Change booking";
    $("book-keep").hidden = false;
    form.scrollIntoView({ block: "center" });
    form.start.focus();
  }
  function changeHeading(r, gone) {
    return `Change ${party(r)} at ${r.time}${onDay(r)}${gone ? ` — ${gone}` : ""}`;
  }
  // What a booking no longer booked became, for the heading of its open change.
  const BECAME = { cancelled: "cancelled meanwhile", "no-show": "a no-show meanwhile", seated: "seated meanwhile" };
  // A live update while Change… is open (another tablet, the partner, the clock): the form
  // shows the booking as it now is. The heading says its size and time; the fields the
  // host has not touched follow them, those the host edited are kept (a change sends only
  // what differs from the booking as it now is, so nothing done elsewhere is undone). A
  // booking gone meanwhile is said at once; the form stays as it is, and Change booking
  // then says it was not changed and offers to book the guest anew (as before). True when
  // the form's size or time was changed here.
  function follow() {
    const r = st.changing;
    if (!r || st.sending) return false;
    const day = ownDay();
    const rows = day === st.floor?.day ? st.floor.reservations : listed.day === day ? listed.rows : null;
    if (!rows) return false;  // its day is not listed here: nothing known of it
    const now = rows.find((x) => x.reservation_id === r.reservation_id);
    const status = now ? now.status : "gone";
    if (!now || now.moved_to || !(status === "booked" || status === "arrived")) {
      const short = now?.moved_to ? `moved to ${now.moved_to} meanwhile` : BECAME[status] || "no longer booked";
      if (st.gone === short) return false;
      st.gone = short;
      setText($("book-h"), changeHeading(r, short));
      // A booking moved to another day is still a booking (Change booking changes it
      // there); any other is nothing left to change.
      const why = now?.moved_to ? `was moved to ${now.moved_to} meanwhile (on another tablet or online)`
        : `${INACTIVE[{ cancelled: "it was cancelled", "no-show": "it became a no-show", seated: "the guests are already seated" }[status]]
          || "is no longer booked"}: there is nothing left to change`;
      say(`The booking of ${party(r)} ${why}.`, "bad");
      return false;
    }
    st.gone = null;
    const was = r;
    st.changing = { ...now, day: r.day };  // `day`: another day's list says it; today's not
    const form = $("book-form");
    const moved = now.size !== was.size || now.start !== was.start;
    if (moved) {
      if (!st.touched.size && now.size) form.size.value = now.size;
      if (!st.touched.start && formDay() === day) chooseTime(now.start, day);
      const size = now.size ? `party of ${now.size} ` : "";
      say(`The booking of ${who(now)} was changed meanwhile (on another tablet or online): now ${size}at ${now.time}${onDay(st.changing)}.`, "");
    }
    setText($("book-h"), changeHeading(st.changing));
    return moved;
  }
  // The booking being changed is gone (cancelled, seated or a no-show meanwhile): the form
  // is the phone booking's again, with the guest's details and the time chosen kept.
  function keepAsNew() {
    const form = $("book-form");
    st.changing = null; st.gone = null;
    for (const k of HELD) form[k].disabled = false;
    setText($("book-h"), "Phone booking");
    form.querySelector("button[type=submit]").textContent = "Book";
    $("book-keep").hidden = true;
    chooseTime(form.start.value, formDay());
    fillSlots();
  }
  function endChange() {
    const form = $("book-form");
    st.changing = null; st.gone = null;
    chooseTime(null);
    for (const k of HELD) { form[k].value = ""; form[k].disabled = false; }
    form.size.value = form.size.defaultValue;  // the booking's size was its own
    setText($("book-h"), "Phone booking");
    form.querySelector("button[type=submit]").textContent = "Book";
    $("book-keep").hidden = true;
    fillSlots();  // the booking's own time is no longer held for it
  }
  async function change(form, r) {
    const size = parseInt(form.size.value, 10);
    const start = form.start.value;
    if (!start) { say(`No open slot that day for a party of ${size}`, "bad"); return; }
    // Only what the host changed in the form: a change made meanwhile elsewhere (another
    // tablet, the partner) to the rest stands, as the server keeps it (it works a change
    // out again on the booking as it now is); nothing changed asks for the booking as is.
    const asked = {};
    if (size !== r.size) asked.party_size = size;
    if (start !== ownStart()) asked.start = start;
    st.sending = true;  // the live update of the host's own change is not "meanwhile"
    let res;
    try {
      res = await paced(`/reservations/${encodeURIComponent(r.reservation_id)}/change`,
        asked, `Change ${who(r)} to ${start.slice(11)}, party of ${size},`, formDay());
    } finally { st.sending = false; }
    if (res.data?.error?.code === "reservation not active") {
      // Nothing left to change: the form books the guest anew (their details kept), the
      // guest on the phone may still want a table.
      say(`${explain(res, { name: party(r), undone: "it was not changed" })} Book makes a new booking for ${who(r)}.`, "bad");
      keepAsNew();
      return;
    }
    if (!res.ok) { say(explain(res, { name: party(r) }), "bad"); return; }
    // The day it is booked on, when not today's service, as a phone booking's answer says.
    const on = other.day ? ` on ${other.day}` : "";
    endChange();
    if (other.day) pickDay();  // the form stays on that day, whose spots have changed
    say(`${who(r)} is now booked at ${res.data.start.slice(11, 16)}${on}, party of ${res.data.party_size} (${res.data.unit})${res.over}`, "seat");
  }
  // A host booking or change refused for pacing alone (a table is free, the slot has its
  // bookings) may be made anyway when the host says so (over_pacing, as the API and the
  // CLI allow): asked in the refusal's own words, then sent again with the flag. `over` on
  // the answer is ", over pacing" when the booking stands marked so (read back from the
  // list of `day`, the service day booked on: a booking cancelled meanwhile may have left
  // it within pacing after all).
  async function paced(path, body, doing, day, key = newKey()) {
    let res = await act("POST", path, body, key);
    res.over = "";
    if (res.ok || res.data?.error?.code !== "over pacing" ||
        !confirm(dated(`${res.data.error.message}. ${doing} over pacing anyway?`))) return res;
    res = await act("POST", path, { ...body, over_pacing: true });
    res.over = res.ok && await markedOver(res.data, day) ? ", over pacing" : "";
    return res;
  }
  // The day's list is keyed by service day, not by the start's calendar date: a late
  // service's 00:30 starts on the next date and is listed under the day before.
  async function markedOver(booking, day) {
    try {
      const r = await fetch(api(`/reservations?date=${encodeURIComponent(day)}`), { headers: { Authorization: `Bearer ${st.token}` } });
      const rows = r.ok ? (await r.json()).reservations || [] : [];
      return rows.some((x) => x.reservation_id === booking.reservation_id && x.status === "booked" && x.over_pacing);
    } catch { return false; }
  }
  let unbooked = null;
  async function book(form) {
    if (st.changing) return change(form, st.changing);
    const size = parseInt(form.size.value, 10);
    if (!form.start.value) { say(`No open slot ${other.day ? "that day" : "today"} for a party of ${size}`, "bad"); return; }
    const body = { party_size: size, start: form.start.value, name: form.name.value.trim(), phone: form.phone.value.trim(), notes: form.notes.value.trim() };
    // A booking whose answer never came may have been made: Book tapped again for the same
    // guest and time sends it again under the same key (the server answers what it did,
    // once), as Add walk-in does; a new key booked the guest twice.
    const again = unbooked && Object.keys(body).every((k) => unbooked.body[k] === body[k]);
    const key = again ? unbooked.key : newKey();
    const res = await paced("/reservations", body, `Book ${body.name || "the guest"}`, formDay(), key);
    unbooked = res.status === 0 ? { body, key } : null;
    if (!res.ok) { say(explain(res, { name: `${body.name || "Guest"}, party of ${size}` }), "bad"); return; }
    form.name.value = ""; form.phone.value = ""; form.notes.value = "";
    form.size.value = form.size.defaultValue;  // the next caller is another party
    chooseTime(null);
    const on = other.day ? ` on ${other.day}` : "";
    if (other.day) pickDay();  // that day's spots have changed
    say(`Booked ${body.name || "guest"}, party of ${size}, at ${body.start.slice(11)}${on} (${res.data.unit})${res.over}`, "seat");
  }

  // -- signing in -----------------------------------------------------------------------
  function pathMerchant() {
    const m = location.pathname.match(/^\/host\/([^/]+)/);
    return m ? decodeURIComponent(m[1]) : null;
  }
  async function showSignIn(message) {
    $("stand").hidden = true;
    $("signout").hidden = true;
    $("signin").hidden = false;
    $("signin-error").textContent = message || "";
    setLive(false, message === UNREACHABLE ? "offline" : "signed out");
    $("clock").textContent = "";  // no floor read: a time left there stops, as if it were now
    const select = $("merchant");
    const fixed = pathMerchant();
    const keep = saved().merchant;
    try {
      const list = await (await fetch("/api/v1/tablet/restaurants")).json();
      select.replaceChildren(...list.filter((r) => !fixed || r.merchant_id === fixed)
        .map((r) => h("option", { value: r.merchant_id }, r.name)));
    } catch {
      // Offline: the select stays as it was, or (a page just loaded) holds the restaurant
      // known here, so Sign in can be tapped again once the server answers.
      const known = fixed || keep;
      if (!select.options.length && known) select.replaceChildren(h("option", { value: known }, known));
    }
    if (keep && !fixed) select.value = keep;
    $("token").focus();
  }
  // "" once signed in, else what went wrong (the server not answering too: a tap on Sign
  // in then said nothing at all, and a tablet reloaded meanwhile stayed blank).
  async function signIn(merchant, token) {
    st.merchant = merchant; st.token = token;
    let status, body;
    try {
      ({ status, body } = await getFloor());
    } catch {
      st.token = null;
      return UNREACHABLE;
    }
    if (status === 401) { st.token = null; return "That host token is not right for this restaurant: check it and try again."; }
    const all = saved();
    save({ merchant, tokens: { ...(all.tokens || {}), [merchant]: token } });
    $("signin").hidden = true;
    $("stand").hidden = false;
    $("signout").hidden = false;
    if (status === 200) draw(body); else if (body.error) say(body.error.message, "bad");
    openStream();
    return "";
  }
  function signOut(message) {
    closeStream();
    const all = saved();
    if (all.tokens && st.merchant) delete all.tokens[st.merchant];
    save(all);
    st.token = null; st.floor = null; st.clockSaid = null;
    showSignIn(message);
  }

  // The room the sticky bar and the message take (tablet.css's scroll-padding): a field
  // brought into view shows between them, whatever their heights (the bar wraps on a phone).
  function keepClear() {
    const root = document.documentElement.style;
    root.setProperty("--bar-room", `${document.querySelector("header.bar").offsetHeight + 8}px`);
    const banner = $("banner");
    root.setProperty("--banner-room", banner.hidden ? "0px" : `${window.innerHeight - banner.getBoundingClientRect().top + 8}px`);
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (window.ResizeObserver) {
      const watch = new ResizeObserver(keepClear);
      watch.observe(document.querySelector("header.bar"));
      watch.observe($("banner"));
    }
    window.addEventListener("resize", keepClear);
    keepClear();
    $("signin-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const msg = await signIn($("merchant").value, $("token").value.trim());
      $("signin-error").textContent = msg;
      if (!msg) $("token").value = "";
    });
    // Signing out forgets the host token on this tablet: asked first, as a tap meant for
    // the bar beside it must not leave the host typing the token in the middle of service.
    $("signout").addEventListener("click", () => {
      if (confirm("Sign out of the host stand? The host token is needed to sign in again.")) signOut("");
    });
    $("banner-close").addEventListener("click", unsay);
    // A tap in a menu (outside #stand) keeps the row that opened it; a form sent with
    // the keyboard's Enter is where the host is.
    document.addEventListener("click", (e) => {
      const on = tappedOn(e.target);
      if (on || e.target.closest?.("#stand")) st.tapped = on;
    }, true);
    document.addEventListener("submit", (e) => { st.tapped = tappedOn(e.target); }, true);
    // The phone booking, far down a phone's page on a night of thirty bookings, at once:
    // a caller waits while the host scrolls 6,000 px. The panels keep their order.
    $("to-book").addEventListener("click", () => {
      $("book-h").scrollIntoView({ block: "start" });
      $("book-form").size.focus({ preventScroll: true });
    });
    $("chooser-cancel").addEventListener("click", () => $("chooser").close());
    const walkin = $("walkin-form");
    walkin.size.addEventListener("input", sizeLimit);
    walkin.addEventListener("submit", (e) => { e.preventDefault(); tap(walkin.querySelector("button"), () => addWalkIn(walkin)); });
    $("res-find").addEventListener("input", () => { if (st.floor) drawReservations(st.floor); });
    $("res-day").addEventListener("change", listDay);
    $("res-day").addEventListener("input", showDays);
    $("book-day").addEventListener("input", showDays);
    const bookForm = $("book-form");
    bookForm.size.addEventListener("input", () => { st.touched.size = true; sizeLimit(); fillSlots(); });
    bookForm.day.addEventListener("change", () => { showDays(); pickDay(); });
    bookForm.start.addEventListener("change", () => {
      chooseTime(bookForm.start.value, formDay());
      // Their own time chosen again is no choice of the host's: it follows the booking.
      st.touched.start = bookForm.start.value !== ownStart();
    });
    $("book-keep").addEventListener("click", endChange);
    bookForm.addEventListener("submit", (e) => { e.preventDefault(); tap(bookForm.querySelector("button[type=submit]"), () => book(bookForm)); });
    const all = saved();
    const merchant = pathMerchant() || all.merchant;
    const token = merchant && all.tokens ? all.tokens[merchant] : null;
    if (merchant && token) {
      signIn(merchant, token).then(async (msg) => {
        if (!msg) return;
        await showSignIn(msg);
        // Not reached: the token saved here is still good, one tap on Sign in tries again.
        if (msg === UNREACHABLE) $("token").value = token;
      });
    } else {
      showSignIn("");
    }
  });
})();
