// The Node.js peer of issue 9: @node-idempotency/core 1.0.11 with its Redis adapter on node's http
// server, a JSON echo without (/echo) and under it (/idem/echo). Started by ./run.
const http = require('http');
const { Idempotency } = require('@node-idempotency/core');
const { RedisStorageAdapter } = require('@node-idempotency/storage-adapter-redis');
const port = Number(process.argv[2] || 8098);
const storage = new RedisStorageAdapter({ url: 'redis://127.0.0.1:6379' });
// records under a prefix of their own, which ./run deletes afterwards
const idempotency = new Idempotency(storage, { cacheKeyPrefix: 'peer-node', idempotencyKeyExpiryInMs: 86400000 });
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
async function handle(req, res) {
  const raw = await readBody(req);
  const body = JSON.parse(raw);
  if (req.url === '/echo') {
    const out = JSON.stringify(body);
    res.writeHead(201, { 'content-type': 'application/json' });
    return res.end(out);
  }
  if (req.url === '/idem/echo') {
    const ireq = { method: req.method, headers: req.headers, body, path: req.url };
    try {
      const cached = await idempotency.onRequest(ireq);
      if (cached) {
        res.writeHead(cached.additional.status, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
        return res.end(JSON.stringify(cached.body));
      }
    } catch (e) {
      res.writeHead(409, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: String(e.message || e) }));
    }
    const out = body;
    await idempotency.onResponse(ireq, { body: out, additional: { status: 201 } });
    res.writeHead(201, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(out));
  }
  res.writeHead(404); res.end();
}
storage.connect().then(() => {
  http.createServer((req, res) => handle(req, res).catch(e => { res.writeHead(500); res.end(String(e)); }))
    .listen(port, '127.0.0.1', () => console.log('READY ' + port));
});
