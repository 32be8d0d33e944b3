/* meta dashboard: one page, plain JavaScript, no dependencies (docs/http.md). */
'use strict'

const main = document.getElementById('main')
const HISTORY = 180 // samples kept for the live charts (one a second: 3 minutes)
const REFRESH_MS = 3000 // tables refresh their current page this often
const PAGE_SIZE = 50

// ---------------------------------------------------------------------------------------------
// helpers

function esc(value) {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c])
}
const fmtInt = new Intl.NumberFormat('en-US')
function num(n) {
  return n === null || n === undefined ? '—' : fmtInt.format(n)
}
function bytes(n) {
  if (n === null || n === undefined) return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024
    i++
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)} ${units[i]}`
}
function rate(n, unit) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—'
  const v = n >= 100 ? Math.round(n) : n >= 10 ? n.toFixed(1) : n.toFixed(2)
  return `${fmtInt.format(Number(v))} ${unit}`
}
function duration(seconds) {
  const d = Math.floor(seconds / 86400)
  const h = Math.floor((seconds % 86400) / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.floor(seconds % 60)
  return d > 0 ? `${d}d ${h}h ${m}m` : h > 0 ? `${h}h ${m}m ${s}s` : m > 0 ? `${m}m ${s}s` : `${s}s`
}
function ago(ms) {
  if (!ms) return '—'
  const s = Math.max(0, (Date.now() - ms) / 1000)
  return s < 60 ? `${Math.round(s)}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : s < 86400 ? `${Math.round(s / 3600)}h ago` : new Date(ms).toISOString().slice(0, 16).replace('T', ' ')
}
function hashParams() {
  const [, query = ''] = location.hash.split('?')
  return new URLSearchParams(query)
}

function token() {
  return localStorage.getItem('meta-http-token') || ''
}

async function api(path, options = {}) {
  // X-Meta-Request: what the server asks of a request that changes something (docs/http.md).
  const headers = {accept: 'application/json', 'x-meta-request': '1'}
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  if (token()) headers.authorization = `Bearer ${token()}`
  const res = await fetch(path, {method: options.method || 'GET', headers, body: options.body === undefined ? undefined : JSON.stringify(options.body)})
  const data = await res.json().catch(() => ({error: `HTTP ${res.status}`}))
  if (res.status === 401 && !options.retried) {
    const given = await confirmDialog({title: 'HTTP token needed', text: data.error || 'This action needs the HTTP token (meta serve --http-token).', ok: 'Send', askToken: true})
    if (given) return api(path, {...options, retried: true})
  }
  if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`)
  return data
}

/** A confirmation dialog; resolves true when confirmed. With askToken, stores the token typed. */
function confirmDialog({title, text, ok = 'Confirm', askToken = false}) {
  const dialog = document.getElementById('confirm')
  document.getElementById('confirm-title').textContent = title
  document.getElementById('confirm-text').textContent = text
  document.getElementById('confirm-ok').textContent = ok
  document.getElementById('token-row').classList.toggle('hidden', !askToken)
  const input = document.getElementById('token-input')
  input.value = ''
  dialog.returnValue = ''
  dialog.showModal()
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        const confirmed = dialog.returnValue === 'ok'
        if (confirmed && askToken) localStorage.setItem('meta-http-token', input.value)
        resolve(confirmed)
      },
      {once: true},
    )
  })
}

function table(columns, rows, empty = 'Nothing here yet.') {
  if (rows.length === 0) return `<div class="empty">${esc(empty)}</div>`
  const head = columns.map((c) => `<th class="${c.num ? 'num' : ''}">${esc(c.label)}</th>`).join('')
  const cls = (c) => [c.num ? 'num' : '', c.wrap ? 'wrap' : ''].filter(Boolean).join(' ')
  const body = rows.map((r) => `<tr>${columns.map((c) => `<td class="${cls(c)}">${c.html ? c.html(r) : esc(c.value(r))}</td>`).join('')}</tr>`).join('')
  return `<div class="table-wrap"><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`
}

function pager(page, total, size) {
  const pages = Math.max(1, Math.ceil(total / size))
  return `<div class="pager"><span>${num(total)} rows · page ${page + 1} of ${pages}</span>
    <button class="secondary small" data-page-to="${page - 1}" ${page <= 0 ? 'disabled' : ''}>‹ Prev</button>
    <button class="secondary small" data-page-to="${page + 1}" ${page + 1 >= pages ? 'disabled' : ''}>Next ›</button></div>`
}
function onPager(container, go) {
  container.querySelectorAll('[data-page-to]').forEach((b) => b.addEventListener('click', () => go(Number(b.dataset.pageTo))))
}
/** A page of rows (`data` as the API pages it) with its pager; `go(page)` shows another page. */
function pagedTable(holder, data, go, columns, rows, empty) {
  holder.innerHTML = table(columns, rows, empty) + pager(data.page, data.total, data.size)
  onPager(holder, go)
}

// ---------------------------------------------------------------------------------------------
// live counters (one SSE stream for every page)

const live = {samples: [], listeners: new Set()}
/** The counters' recent past, kept by the broker (one sample a second): the charts start filled. */
async function loadHistory() {
  try {
    const {samples} = await api('/api/history')
    const recent = samples.slice(-HISTORY - 1)
    for (let i = 1; i < recent.length; i++) addRates(recent[i], recent[i - 1])
    live.samples = recent.slice(1).map((s) => ({...s, history: true}))
  } catch {
    // An older broker without /api/history: the charts fill as samples arrive.
  }
}
/**
 * Rates per second. The broker sends them measured over a sliding window (src/http/history.ts),
 * which bursty producers cannot alias into a saw-tooth; only an older broker's samples are
 * differenced here, against the previous one.
 */
function addRates(sample, previous) {
  if (!previous || sample.putRate !== undefined) return
  const dt = (sample.timeMs - previous.timeMs) / 1000 || 1
  sample.putRate = Math.max(0, (sample.cmdPut - previous.cmdPut) / dt)
  sample.getRate = Math.max(0, (sample.cmdGet - previous.cmdGet) / dt)
  sample.inRate = Math.max(0, (sample.receivedBytes - previous.receivedBytes) / dt)
  sample.outRate = Math.max(0, (sample.sentBytes - previous.sentBytes) / dt)
}
/** Settles once the history is in live.samples: the overview waits for it, so it paints filled. */
let historyLoaded = Promise.resolve()
async function connectLive() {
  const dot = document.getElementById('live-dot')
  const label = document.getElementById('live-text')
  historyLoaded = loadHistory()
  await historyLoaded
  const source = new EventSource('/api/events')
  source.addEventListener('counters', (e) => {
    const sample = JSON.parse(e.data)
    addRates(sample, live.samples[live.samples.length - 1])
    live.samples.push(sample)
    if (live.samples.length > HISTORY) live.samples.shift()
    dot.className = 'dot live'
    label.textContent = 'live'
    for (const fn of live.listeners) fn(sample)
  })
  source.onerror = () => {
    dot.className = 'dot down'
    label.textContent = 'reconnecting…'
  }
}

/** A line chart with labelled axes: y in `unit`, x in seconds before now. */
function drawChart(canvas, series, unit, secondsPerSample = 1) {
  const ratio = window.devicePixelRatio || 1
  const width = canvas.clientWidth
  const height = canvas.clientHeight
  if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
    canvas.width = width * ratio
    canvas.height = height * ratio
  }
  const g = canvas.getContext('2d')
  g.setTransform(ratio, 0, 0, ratio, 0, 0)
  g.clearRect(0, 0, width, height)
  const left = 58
  const right = 10
  const top = 18
  const bottom = 24
  const w = width - left - right
  const h = height - top - bottom
  const points = series[0].values.length
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v) => Number.isFinite(v))))
  const step = niceCeil(max / 4)
  const niceMax = step * 4
  g.font = '11px system-ui, sans-serif'
  g.fillStyle = '#6b7280'
  g.strokeStyle = '#e5e7eb'
  g.lineWidth = 1
  g.textAlign = 'right'
  g.textBaseline = 'middle'
  for (let i = 0; i <= 4; i++) {
    const y = top + h - (h * i) / 4
    g.beginPath()
    g.moveTo(left, Math.round(y) + 0.5)
    g.lineTo(left + w, Math.round(y) + 0.5)
    g.stroke()
    g.fillText(compact(step * i), left - 6, y)
  }
  g.save()
  g.translate(12, top + h / 2)
  g.rotate(-Math.PI / 2)
  g.textAlign = 'center'
  g.fillText(unit, 0, 0)
  g.restore()
  g.textAlign = 'center'
  g.textBaseline = 'top'
  const span = HISTORY - 1
  const minutes = (span * secondsPerSample) / 60
  const stepMinutes = minutes > 6 ? Math.ceil(minutes / 3) : 1
  for (let m = 0; m <= minutes; m += stepMinutes) {
    const x = left + w - (w * m * 60) / (span * secondsPerSample)
    g.fillText(m === 0 ? 'now' : `-${m}m`, Math.min(Math.max(x, left + 10), left + w - 10), top + h + 6)
  }
  for (const s of series) {
    g.strokeStyle = s.color
    g.lineWidth = 2
    g.beginPath()
    let started = false
    s.values.forEach((v, i) => {
      if (!Number.isFinite(v)) return
      const x = left + w - (w * (points - 1 - i)) / span
      const y = top + h - (h * v) / niceMax
      if (started) g.lineTo(x, y)
      else g.moveTo(x, y)
      started = true
    })
    g.stroke()
  }
}
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}
function compact(v) {
  if (v >= 1e9) return `${+(v / 1e9).toFixed(1)}G`
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`
  return `${+v.toFixed(v < 10 ? 1 : 0)}`
}

// ---------------------------------------------------------------------------------------------
// pages

const pages = {
  async overview(page) {
    const [o] = await Promise.all([api('/api/overview'), historyLoaded])
    main.innerHTML = `
      <h1>Broker ${esc(o.brokerId)}</h1>
      <p class="subtitle">${esc(o.url)} · meta ${esc(o.version)} · <span class="badge ${o.mode === 'cluster' ? 'green' : ''}">${esc(o.mode)}</span>${o.slave ? ' <span class="badge amber">slave</span>' : ''}</p>
      <div class="cards">
        <div class="card"><div class="label">Put rate</div><div class="value" id="put-rate">—</div></div>
        <div class="card"><div class="label">Get rate</div><div class="value" id="get-rate">—</div></div>
        <div class="card"><div class="label">Messages stored</div><div class="value" id="total-messages">${num(o.totalMessages)}</div></div>
        <div class="card"><div class="label">Data stored</div><div class="value" id="total-bytes">${bytes(o.totalBytes)}</div></div>
        <div class="card"><div class="label">Messages put</div><div class="value" id="cmd-put">${num(o.cmdPut)}</div></div>
        <div class="card"><div class="label">Gets</div><div class="value" id="cmd-get">${num(o.cmdGet)}</div></div>
        <div class="card"><div class="label">Connections</div><div class="value" id="connections">${num(o.connections)}</div></div>
        <div class="card"><div class="label">Uptime</div><div class="value" id="uptime">${duration(o.uptimeSeconds)}</div></div>
        <div class="card" title="Topics and partitions holding data"><div class="label">Topics · partitions</div><div class="value" id="topics-partitions">${num(o.topics)} · ${num(o.partitions)}</div></div>
        <div class="card"><div class="label">Config checksum</div><div class="value small">${esc(o.configChecksum)}</div></div>
      </div>
      <div class="charts">
        <div class="panel"><h2>Messages per second</h2><canvas class="chart" id="chart-messages"></canvas>
          <div class="legend"><span><i style="background:#4f46e5"></i>put</span><span><i style="background:#059669"></i>get requests</span></div></div>
        <div class="panel"><h2>Network throughput</h2><canvas class="chart" id="chart-bytes"></canvas>
          <div class="legend"><span><i style="background:#d97706"></i>in</span><span><i style="background:#0ea5e9"></i>out</span></div></div>
      </div>
      <div class="panel"><h2>Broker</h2>${table(
        [{label: 'Setting', value: (r) => r[0]}, {label: 'Value', html: (r) => `<span class="mono">${esc(r[1])}</span>`}],
        [['Listening on', `${o.host}:${o.port}`], ['Data directory', o.dataPath], ['server.ini', o.configPath || '(none: flags and defaults)'], ['ZooKeeper', o.zk || '(standalone)']],
      )}${table(
        [{label: 'Counter', value: (r) => r[0]}, {label: 'Since start', num: true, html: (r) => `<span id="${r[1]}">${num(r[2])}</span>`}],
        [['Failed puts (messages)', 'put-failed', o.putFailed], ['Gets that found nothing', 'get-miss', o.getMiss]],
      )}</div>`
    const drawRates = (s) => {
      document.getElementById('put-rate').textContent = rate(s.putRate, 'msg/s')
      document.getElementById('get-rate').textContent = rate(s.getRate, 'req/s')
      const pad = (values) => Array(Math.max(0, HISTORY - values.length)).fill(NaN).concat(values)
      drawChart(document.getElementById('chart-messages'), [
        {color: '#4f46e5', values: pad(live.samples.map((x) => x.putRate))},
        {color: '#059669', values: pad(live.samples.map((x) => x.getRate))},
      ], 'per second')
      drawChart(document.getElementById('chart-bytes'), [
        {color: '#d97706', values: pad(live.samples.map((x) => x.inRate))},
        {color: '#0ea5e9', values: pad(live.samples.map((x) => x.outRate))},
      ], 'bytes per second')
    }
    const update = (s) => {
      if (!document.getElementById('put-rate')) return
      drawRates(s)
      document.getElementById('total-messages').textContent = num(s.totalMessages)
      document.getElementById('total-bytes').textContent = bytes(s.totalBytes)
      document.getElementById('cmd-put').textContent = num(s.cmdPut)
      document.getElementById('cmd-get').textContent = num(s.cmdGet)
      document.getElementById('connections').textContent = num(s.connections)
      document.getElementById('uptime').textContent = duration(s.uptimeSeconds)
      document.getElementById('topics-partitions').textContent = `${num(s.topics)} · ${num(s.partitions)}`
      document.getElementById('put-failed').textContent = num(s.putFailed)
      document.getElementById('get-miss').textContent = num(s.getMiss)
    }
    // First paint: rates and charts from the last sample there is (a sample from the history has
    // the rates but not the totals, which /api/overview gave); the first live one draws all.
    const last = live.samples[live.samples.length - 1]
    if (last !== undefined && !last.history) update(last)
    else if (last !== undefined) drawRates(last)
    page.onTick(update)
  },

  async topics(page) {
    const params = hashParams()
    let pageNo = Number(params.get('page') || 0)
    let filter = params.get('q') || ''
    const previous = new Map()
    main.innerHTML = `<h1>Topics</h1><p class="subtitle">Topics this broker accepts or holds. Put rates are messages stored per second over the last 5 s; the table refreshes every ${REFRESH_MS / 1000} s.</p>
      <div class="panel"><div class="toolbar"><input id="topic-filter" placeholder="Filter topics" value="${esc(filter)}"><span class="spacer"></span></div><div id="topics-table"></div></div>`
    const holder = document.getElementById('topics-table')
    const load = async () => {
      const data = await api(`/api/topics?page=${pageNo}&size=${PAGE_SIZE}&q=${encodeURIComponent(filter)}`)
      const now = Date.now()
      for (const t of data.items) {
        const before = previous.get(t.topic)
        // The broker's rate over its sliding window, so the first paint has one; an older broker's between refreshes.
        t.rate = t.putRate ?? (before ? Math.max(0, (t.messageCount - before.count) / ((now - before.at) / 1000)) : null)
        previous.set(t.topic, {count: t.messageCount, at: now})
      }
      pagedTable(holder, data, (p) => {
        pageNo = p
        load()
      },
        [
          {label: 'Topic', html: (t) => `<a href="#/topics/${encodeURIComponent(t.topic)}">${esc(t.topic)}</a>`},
          {label: 'Partitions', num: true, value: (t) => num(Math.max(t.partitions, t.numPartitions || 0))},
          {label: 'Messages', num: true, value: (t) => num(t.messageCount)},
          {label: 'Size', num: true, value: (t) => bytes(t.messageBytes)},
          {label: 'Put rate', num: true, value: (t) => rate(t.rate, 'msg/s')},
          {label: 'Publish', html: (t) => (t.empty ? '<span class="badge">no data</span>' : t.acceptPublish ? '<span class="badge green">yes</span>' : '<span class="badge red">no</span>')},
          {label: 'Subscribe', html: (t) => (t.empty ? '' : t.acceptSubscribe ? '<span class="badge green">yes</span>' : '<span class="badge red">no</span>')},
        ],
        data.items,
        filter ? `No topic matches “${filter}”.` : 'No topics yet: put a message (meta send -t <topic>).',
      )
    }
    document.getElementById('topic-filter').addEventListener('input', (e) => {
      filter = e.target.value
      pageNo = 0
      load()
    })
    await page.refreshing(load)
  },

  async topic(page, topic) {
    let pageNo = Number(hashParams().get('page') || 0)
    main.innerHTML = `<div class="crumbs"><a href="#/topics">Topics</a> / ${esc(topic)}</div><h1>${esc(topic)}</h1><p class="subtitle" id="topic-sub"></p>
      <div class="panel"><h2>Partitions</h2><div id="partitions-table"></div></div>`
    const holder = document.getElementById('partitions-table')
    const load = async () => {
      const data = await api(`/api/topics/${encodeURIComponent(topic)}/partitions?page=${pageNo}&size=${PAGE_SIZE}`)
      document.getElementById('topic-sub').textContent = `${num(data.total)} partitions on this broker${data.acceptPublish === false ? ' · publishing refused (acceptPublish=false)' : ''}`
      pagedTable(holder, data, (p) => {
        pageNo = p
        load()
      },
        [
          {label: 'Partition', html: (p) => (p.empty ? esc(p.partition) : `<a href="#/topics/${encodeURIComponent(topic)}/${p.partition}">${p.partition}</a>`)},
          {label: 'Start offset', num: true, value: (p) => num(p.start)},
          {label: 'End offset', num: true, value: (p) => num(p.end)},
          {label: 'Messages', num: true, value: (p) => num(p.messages)},
          {label: 'Size', num: true, value: (p) => bytes(p.sizeBytes)},
          {label: 'Segments', num: true, value: (p) => num(p.segments)},
          {label: 'Last put', value: (p) => ago(p.lastAppendMs)},
          {label: 'State', html: (p) => (p.closed ? '<span class="badge red">closed</span>' : p.empty ? '<span class="badge">empty</span>' : '<span class="badge green">open</span>')},
          {label: '', html: (p) => (p.empty ? '' : `<a href="#/topics/${encodeURIComponent(topic)}/${p.partition}">Browse</a>`)},
        ],
        data.items,
      )
    }
    await page.refreshing(load)
  },

  async browse(page, topic, partition) {
    const params = hashParams()
    const state = {offset: params.get('offset') || '', time: params.get('time') || '', format: params.get('format') || 'text', history: []}
    main.innerHTML = `<div class="crumbs"><a href="#/topics">Topics</a> / <a href="#/topics/${encodeURIComponent(topic)}">${esc(topic)}</a> / partition ${esc(partition)}</div>
      <h1>${esc(topic)} · partition ${esc(partition)}</h1><p class="subtitle" id="bounds"></p>
      <div class="panel">
        <div class="toolbar">
          <label>From offset <input id="from-offset" type="number" min="0" style="width:130px" value="${esc(state.offset)}"></label>
          <label>or time <input id="from-time" type="datetime-local" step="1"></label>
          <button id="go">Go</button>
          <button class="secondary" id="live" title="Show new messages as they are put">Follow live</button>
          <span class="spacer"></span>
          <label>Show as <select id="format"><option value="text">text</option><option value="hex">hex</option><option value="json">JSON</option></select></label>
        </div>
        <div id="messages"></div>
        <div class="pager"><button class="secondary small" id="newer-first">⇤ Start</button><button class="secondary small" id="prev">‹ Previous</button><button class="secondary small" id="next">Next ›</button></div>
      </div>`
    document.getElementById('format').value = state.format
    const holder = document.getElementById('messages')
    let current = null
    const load = async (query) => {
      if (following) stopFollowing()
      const data = await api(`/api/topics/${encodeURIComponent(topic)}/partitions/${partition}/messages?limit=20&${query}`)
      current = data
      document.getElementById('bounds').textContent = `Offsets ${num(data.start)} to ${num(data.end)} · showing ${data.messages.length} message(s) from ${num(data.from)}`
      document.getElementById('from-offset').value = data.from
      render()
    }
    const render = () => {
      if (!current) return
      holder.innerHTML = current.messages.length === 0 ? `<div class="empty">${following ? 'Waiting for new messages…' : 'No messages from this offset (the end of the log).'}</div>` : current.messages.map((m) => `
        <div class="message"><div class="meta"><span>offset <b>${num(m.offset)}</b></span><span>id <b class="mono">${esc(m.msgId)}</b></span><span>${esc(new Date(m.timeMs).toISOString())}</span><span title="payload bytes">${num(m.size)} bytes</span>${m.flag ? `<span>flag <b>${esc(m.flag)}</b></span>` : ''}${m.attribute !== undefined ? `<span>attribute <b>${esc(m.attribute)}</b></span>` : ''}</div>
        <pre>${esc(payload(m, state.format))}</pre></div>`).join('')
    }
    // Follow live: new messages of this partition (newest first) over /follow's event stream.
    let following = null
    const stopFollowing = () => {
      following?.close()
      following = null
      document.getElementById('live').textContent = 'Follow live'
    }
    page.onStop(stopFollowing)
    document.getElementById('live').addEventListener('click', () => {
      if (following) return stopFollowing()
      // From the log end last shown, so nothing put since that load is missed.
      const from = current && Number.isFinite(current.end) ? `&offset=${current.end}` : ''
      following = new EventSource(`/follow?topic=${encodeURIComponent(topic)}&partition=${partition}${from}`)
      document.getElementById('live').textContent = 'Stop following'
      current = {...(current || {}), messages: []}
      document.getElementById('bounds').textContent = 'Following live: new messages appear at the top'
      following.addEventListener('open', render)
      following.addEventListener('message', (e) => {
        const m = JSON.parse(e.data)
        current.messages = [m, ...current.messages].slice(0, 100)
        render()
      })
    })
    document.getElementById('format').addEventListener('change', (e) => {
      state.format = e.target.value
      render()
    })
    document.getElementById('go').addEventListener('click', () => {
      const t = document.getElementById('from-time').value
      state.history = []
      load(t ? `time=${encodeURIComponent(new Date(t).toISOString())}` : `offset=${Number(document.getElementById('from-offset').value || 0)}`)
    })
    document.getElementById('next').addEventListener('click', () => {
      if (!current) return
      state.history.push(current.from)
      load(`offset=${current.nextOffset}`)
    })
    document.getElementById('prev').addEventListener('click', () => {
      if (state.history.length > 0) load(`offset=${state.history.pop()}`)
    })
    document.getElementById('newer-first').addEventListener('click', () => {
      state.history = []
      load('')
    })
    await load(state.time ? `time=${encodeURIComponent(state.time)}` : state.offset ? `offset=${state.offset}` : '')
  },

  async groups(page) {
    let pageNo = 0
    main.innerHTML = `<h1>Consumer groups</h1><p class="subtitle">Groups with members or committed offsets.</p><div class="panel"><div id="groups-table"></div></div>`
    const holder = document.getElementById('groups-table')
    const load = async () => {
      const data = await api(`/api/groups?page=${pageNo}&size=${PAGE_SIZE}`)
      pagedTable(holder, data, (p) => {
        pageNo = p
        load()
      },
        [
          {label: 'Group', html: (g) => `<a href="#/groups/${encodeURIComponent(g.group)}">${esc(g.group)}</a>`},
          {label: 'Members', num: true, value: (g) => num(g.members)},
          {label: 'Generation', num: true, value: (g) => num(g.generation)},
          {label: 'Topics', value: (g) => g.topics.join(', ')},
          {label: 'State', html: (g) => (g.members > 0 ? '<span class="badge green">active</span>' : '<span class="badge">no members</span>')},
        ],
        data.items,
        'No consumer groups yet.',
      )
    }
    await page.refreshing(load)
  },

  async group(page, group) {
    let pageNo = 0
    const lagHistory = new Map() // "topic partition" → messages behind, one value per refresh
    let refreshes = 0
    main.innerHTML = `<div class="crumbs"><a href="#/groups">Consumer groups</a> / ${esc(group)}</div><h1>${esc(group)}</h1><p class="subtitle" id="group-sub"></p>
      <div id="group-notice"></div>
      <div class="charts"><div class="panel"><h2 title="The most lagging partitions of this page, sampled at each refresh">Lag over time</h2><canvas class="chart" id="chart-lag"></canvas>
        <div class="legend" id="lag-legend"></div></div>
        <div class="panel"><h2>Members</h2><div id="members-table"></div></div></div>
      <div class="panel"><h2>Partitions</h2><div id="lag-table"></div></div>`
    const load = async () => {
      const data = await api(`/api/groups/${encodeURIComponent(group)}?page=${pageNo}&size=${PAGE_SIZE}`)
      const totalLag = data.items.reduce((sum, r) => sum + (r.lagMessages || 0), 0)
      refreshes++
      for (const r of data.items) {
        const key = `${r.topic} ${r.brokerId !== undefined && r.brokerId !== null ? `${r.brokerId}-` : ''}${r.partition}`
        const values = lagHistory.get(key) ?? Array(refreshes - 1).fill(NaN)
        values.push(r.lagMessages ?? NaN)
        lagHistory.set(key, values)
      }
      for (const values of lagHistory.values()) {
        while (values.length < refreshes) values.push(NaN)
        while (values.length > HISTORY) values.shift()
      }
      document.getElementById('group-sub').textContent = `Generation ${data.generation} · ${data.members.length} member(s) · ${num(totalLag)} messages behind on this page`
      document.getElementById('members-table').innerHTML = table(
        [
          // Member ids can be long (host, pid and a random part): they wrap rather than widen the table.
          {label: 'Member', wrap: true, value: (m) => m.id},
          {label: 'From', value: (m) => m.host},
          {label: 'Topics', wrap: true, value: (m) => m.topics.join(', ')},
          {label: 'Owns', num: true, value: (m) => num(m.owned.length)},
        ],
        data.members,
        'No live members.',
      )
      const holder = document.getElementById('lag-table')
      pagedTable(holder, data, (p) => {
        pageNo = p
        load()
      },
        [
          {label: 'Topic', html: (r) => `<a href="#/topics/${encodeURIComponent(r.topic)}">${esc(r.topic)}</a>`},
          {label: 'Partition', num: true, value: (r) => r.partition},
          {label: 'Owner', value: (r) => r.owner || '—'},
          {label: 'Committed', num: true, html: (r) => (r.committed === null ? '—' : `<a href="#/topics/${encodeURIComponent(r.topic)}/${r.partition}?offset=${r.committed}">${num(r.committed)}</a>`)},
          {label: 'Log end', num: true, value: (r) => num(r.logEnd)},
          {label: 'Lag (messages)', num: true, value: (r) => num(r.lagMessages)},
          {label: 'Lag (bytes)', num: true, value: (r) => bytes(r.lagBytes)},
          {label: '', html: (r) => (r.committed !== null && r.lagBytes > 0 ? `<button class="secondary small" data-skip="${esc(JSON.stringify({topic: r.topic, partition: r.partition, offset: r.committed}))}">Skip message</button>` : '')},
        ],
        data.items,
        'No partitions: the group has no committed offsets and no subscriptions.',
      )
      holder.querySelectorAll('[data-skip]').forEach((b) => b.addEventListener('click', () => skip(JSON.parse(b.dataset.skip))))
      const palette = ['#dc2626', '#4f46e5', '#059669', '#d97706', '#0ea5e9', '#7c3aed']
      const shown = [...lagHistory.entries()].sort((a, b) => (b[1].at(-1) || 0) - (a[1].at(-1) || 0)).slice(0, palette.length)
      const series = shown.map(([, values], i) => ({color: palette[i], values: Array(Math.max(0, HISTORY - values.length)).fill(NaN).concat(values)}))
      drawChart(document.getElementById('chart-lag'), series.length ? series : [{color: palette[0], values: Array(HISTORY).fill(NaN)}], 'messages behind', REFRESH_MS / 1000)
      document.getElementById('lag-legend').innerHTML = shown.map(([key], i) => `<span><i style="background:${palette[i]}"></i>${esc(key)}</span>`).join('')
    }
    const skip = async (target) => {
      const ok = await confirmDialog({
        title: 'Skip one message?',
        text: `Group “${group}” will move past the message at offset ${target.offset} of ${target.topic} partition ${target.partition}. Its consumers will never process that message.`,
        ok: 'Skip message',
      })
      if (!ok) return
      const notice = document.getElementById('group-notice')
      try {
        const r = await api(`/api/groups/${encodeURIComponent(group)}/skip`, {method: 'POST', body: target})
        notice.innerHTML = `<div class="notice ok">Skipped message ${esc(r.skipped.msgId)}: ${esc(r.topic)} partition ${esc(r.partition)} moved from offset ${num(r.before)} to ${num(r.after)}.</div>`
      } catch (error) {
        notice.innerHTML = `<div class="notice error">${esc(error.message)}</div>`
      }
      load()
    }
    await page.refreshing(load)
  },

  async cluster() {
    const slaveBadge = (s) => {
      if (s.error !== undefined) return `<span class="badge red" title="${esc(s.error)}">${esc(s.name)} · no status</span>`
      const lag = s.lagMessages === null ? bytes(s.lagBytes) : `${num(s.lagMessages)} msgs, ${bytes(s.lagBytes)}`
      return `<span class="badge ${s.healthy ? 'green' : 'amber'}" title="${esc(s.problem ?? `${s.url}: replicating ${s.partitions} partitions`)}">${esc(s.name)} · lag ${esc(lag)}</span>`
    }
    const data = await api('/api/cluster')
    if (data.mode !== 'cluster') {
      main.innerHTML = `<h1>Cluster</h1><div class="panel"><div class="empty">This broker runs standalone (no ZooKeeper). Start it with <span class="mono">--zk host:port</span> to join a cluster.</div></div>`
      return
    }
    main.innerHTML = `<h1>Cluster</h1><p class="subtitle">From ZooKeeper ${esc(data.zk)}</p>
      <div class="notice">Slaves as they register in ZooKeeper; each asynchronous slave is asked for its lag when the page loads.</div>
      <div class="panel"><h2>Brokers</h2>${table(
        [
          {label: 'Broker', html: (b) => `${esc(b.id)}${b.self ? ' <span class="badge">this broker</span>' : ''}`},
          {label: 'Master', html: (b) => `<span class="mono">${esc(b.url)}</span>`},
          {label: 'Slaves', html: (b) => (b.slaves.length ? b.slaves.map(slaveBadge).join(' ') : 'none registered')},
        ],
        data.brokers,
        'No brokers registered.',
      )}</div>
      <div class="panel"><h2>Topics</h2>${table(
        [
          {label: 'Topic', value: (t) => t.topic},
          {label: 'Where', html: (t) => t.brokers.map((b) => `<span class="badge ${b.role === 'master' ? 'green' : 'amber'}">broker ${esc(b.brokerId)} ${esc(b.role)} · ${esc(b.partitions)} partitions${b.publish ? '' : ' · read only'}</span>`).join(' ')},
        ],
        data.topics,
        'No topics registered.',
      )}</div>`
  },

  async config() {
    const data = await api('/api/config')
    main.innerHTML = `<h1>Config</h1><p class="subtitle">${data.path ? `<span class="mono">${esc(data.path)}</span>` : 'No server.ini: flags and defaults'} · checksum <span class="mono" id="checksum">${esc(data.checksum)}</span></p>
      <div id="reload-result"></div>
      <div class="panel"><div class="toolbar"><h2 style="margin:0">server.ini</h2><span class="spacer"></span>
        <button class="secondary" id="check" ${data.path ? '' : 'disabled'}>Check (dry run)</button><button id="reload" ${data.path ? '' : 'disabled'}>Reload</button></div>
        <pre id="config-text">${esc(data.text)}</pre></div>`
    const run = async (dryRun) => {
      if (!dryRun) {
        const ok = await confirmDialog({title: 'Reload the configuration?', text: 'The broker re-reads its server.ini and applies what changed (topic sections and their defaults); other changes wait for a restart.', ok: 'Reload'})
        if (!ok) return
      }
      const holder = document.getElementById('reload-result')
      try {
        const report = await api('/api/reload', {method: 'POST', body: {dryRun}})
        const changes = report.changes || []
        holder.innerHTML = `<div class="notice ok">${dryRun ? 'Dry run: ' : ''}${report.changed ? `${changes.length} change(s)${dryRun ? ' would be made' : ' applied'}.` : 'The file is unchanged.'}</div>` +
          (changes.length ? `<div class="panel">${table(
            [
              {label: 'Section', value: (c) => c.section},
              {label: 'Key', value: (c) => c.key},
              {label: 'Before', html: (c) => `<span class="mono">${esc(c.before)}</span>`},
              {label: 'After', html: (c) => `<span class="mono">${esc(c.after)}</span>`},
              {label: 'Applied', html: (c) => (c.applied === false ? `<span class="badge amber">${esc(c.note || 'after a restart')}</span>` : '<span class="badge green">yes</span>')},
            ],
            changes,
          )}</div>` : '')
        if (!dryRun) {
          const fresh = await api('/api/config')
          document.getElementById('config-text').textContent = fresh.text
          document.getElementById('checksum').textContent = fresh.checksum
        }
      } catch (error) {
        holder.innerHTML = `<div class="notice error">${esc(error.message)}</div>`
      }
    }
    document.getElementById('check').addEventListener('click', () => run(true))
    document.getElementById('reload').addEventListener('click', () => run(false))
  },
}

function payload(m, format) {
  const raw = atob(m.payload)
  if (format === 'hex') {
    const lines = []
    for (let i = 0; i < raw.length; i += 16) {
      const chunk = raw.slice(i, i + 16)
      const hex = [...chunk].map((c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join(' ')
      const text = [...chunk].map((c) => (c.charCodeAt(0) >= 32 && c.charCodeAt(0) < 127 ? c : '.')).join('')
      lines.push(`${i.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${text}`)
    }
    return lines.join('\n')
  }
  if (format === 'json') {
    if (m.text === undefined) return '(not UTF-8 text: choose hex)'
    try {
      return JSON.stringify(JSON.parse(m.text), null, 2)
    } catch (error) {
      return `(not JSON: ${error.message})\n${m.text}`
    }
  }
  return m.text !== undefined ? m.text : '(not UTF-8 text: choose hex)'
}

// ---------------------------------------------------------------------------------------------
// routing

let currentPage = null
async function route() {
  if (currentPage) currentPage.stop()
  const timers = []
  const page = {
    stopped: false,
    every(ms, fn) {
      timers.push(setInterval(() => fn().catch(showError), ms))
    },
    /** Load now, then again every REFRESH_MS while the page is shown. */
    async refreshing(load) {
      await load()
      this.every(REFRESH_MS, load)
    },
    onTick(fn) {
      live.listeners.add(fn)
      timers.push({tick: fn})
    },
    /** Call `fn` when the page is left. */
    onStop(fn) {
      timers.push({stop: fn})
    },
    stop() {
      this.stopped = true
      for (const t of timers) {
        if (t.tick) live.listeners.delete(t.tick)
        else if (t.stop) t.stop()
        else clearInterval(t)
      }
    },
  }
  currentPage = page
  const path = location.hash.replace(/^#/, '').split('?')[0]
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent)
  let name = 'overview'
  let args = []
  if (parts[0] === 'topics' && parts.length === 1) name = 'topics'
  else if (parts[0] === 'topics' && parts.length === 2) [name, args] = ['topic', [parts[1]]]
  else if (parts[0] === 'topics' && parts.length >= 3) [name, args] = ['browse', [parts[1], Number(parts[2])]]
  else if (parts[0] === 'groups' && parts.length === 1) name = 'groups'
  else if (parts[0] === 'groups') [name, args] = ['group', [parts[1]]]
  else if (parts[0] === 'cluster') name = 'cluster'
  else if (parts[0] === 'config') name = 'config'
  const section = name === 'topic' || name === 'browse' ? 'topics' : name === 'group' ? 'groups' : name
  document.querySelectorAll('#nav a').forEach((a) => a.classList.toggle('active', a.dataset.page === section))
  document.title = `meta · ${section}`
  main.innerHTML = '<div class="empty">Loading…</div>'
  try {
    await pages[name](page, ...args)
  } catch (error) {
    showError(error)
  }
}
function showError(error) {
  main.insertAdjacentHTML('afterbegin', `<div class="notice error">${esc(error.message)}</div>`)
}

window.addEventListener('hashchange', route)
connectLive()
route()
