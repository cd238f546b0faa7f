// The complete daemon loop the device protocol documents (Node >= 18, no dependencies), with
// runLocally and show defined so it runs: the rest is the documented code, unchanged.
const APP = process.env.APP, id = process.env.DEVICE_ID, token = process.env.DEVICE_TOKEN
const call = (method, path, body) => fetch(APP + path, {
  method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
}).then(r => r.json())
const runLocally = async prompt => `node ran: ${prompt}`
const show = () => {}

async function handle(env) {                      // env = the parsed envelope
  if (env.type === 'invoke') return { result: await runLocally(env.prompt) }
  if (env.type === 'notify') { show(env.title, env.body); return { ok: true } }
  return { ok: false, error: `unknown envelope type ${env.type}` }
}

setInterval(() => call('POST', '/api/devices/heartbeat',
  { deviceId: id, token, capabilities: ['shell', 'screenshot'] }), 20_000)

;(async () => { for (;;) {
  const { messages = [] } = await call('PUT', '/api/devices/relay', { deviceId: id, token, max: 10 })
  for (const m of messages) {
    const reply = await handle(JSON.parse(m.payload))
    await call('PATCH', '/api/devices/relay', { deviceId: id, token, inReplyTo: m.id, payload: JSON.stringify(reply) })
  }
  await new Promise(r => setTimeout(r, messages.length ? 0 : 3_000))
} })()
